// Package envflag reads boolean environment variables, once for the whole
// program: HF_HUB_OFFLINE, SGLANG_IS_IN_CI and SGLANG_USE_MODELSCOPE were
// read by three copies that had drifted apart.
package envflag

import "strings"

// Truthy reports whether an environment value means "on": 1, true, yes or
// on, in any case, with surrounding space ignored, as huggingface_hub
// reads its flags. sglang's own reader takes only 1 and true; the other
// two are accepted too, since nobody sets a flag to "yes" to mean off.
func Truthy(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}
