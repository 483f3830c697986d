package tokenizer

import "testing"

func TestDefaultIsQwen3(t *testing.T) {
	t.Parallel() // one of the slowest tests, independent of the rest
	def, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	file := qwen3(t) // Load("testdata/qwen3"), shared with other tests
	const s = "Hello, 世界! <|im_start|>user\n  spaces\t\ttabs"
	a, _ := def.Encode(s, true)
	b, _ := file.Encode(s, true)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("Default().Encode = %v, Load(testdata/qwen3).Encode = %v", a, b)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("id %d: %d != %d", i, a[i], b[i])
		}
	}
	if def.VocabSize() != 151643 {
		t.Errorf("VocabSize() = %d, want Qwen3's 151643", def.VocabSize())
	}
	if again, _ := Default(); again != def {
		t.Error("Default() loaded twice; want one shared instance")
	}
}

func TestResolveDefaultName(t *testing.T) {
	got, err := Resolve(t.Context(), DefaultName, nil)
	if err != nil {
		t.Fatal(err)
	}
	if def, _ := Default(); got != def {
		t.Errorf("Resolve(%q) is not the embedded tokenizer", DefaultName)
	}
}
