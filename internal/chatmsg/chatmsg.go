// Package chatmsg holds the one type of a chat turn, Message, on the
// ground floor: datasets builds chat histories of it (datasets.Message is
// this type) and the tokenizer renders them with a chat template, so that
// the tokenizer's ApplyChatTemplate satisfies datasets.ChatTemplater
// without importing datasets (and the parquet reader datasets links).
package chatmsg

// Message is one chat turn.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}
