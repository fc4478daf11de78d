package autoroute

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGateAgrees holds match's shortcut through Classifier.gate to the runs it stands for: the
// same hits and negation spans, in the same order, as with every gate word forcing the run to be
// read in mpats.
func TestGateAgrees(t *testing.T) {
	custom := Rules{
		Intents: []IntentRule{
			{Name: "a", Route: "ra", Terms: []string{"patch", "patch tuesday", "not only", "kernel^1",
				"kernel panic^3", "heap spray"}, Against: []string{"patch", "heap"},
				Pairs: []string{"patch|heap spray & tuesday|kernel", "only & not only"}},
			{Name: "b", Route: "rb", Terms: []string{"kernel", "tuesday", "heap^9", "only"}},
		},
		Negations: []string{"not", "not asking", "never"},
	}
	type result struct {
		Hits []hit
		Negs []negSpan
	}
	texts := []string{
		"patch tuesday is not only about the kernel panic, never a heap spray",
		"not asking about a kernel patch; patch patch heap. kernel",
		"heap spray heap not kernel panic patch tuesday tuesday only",
	}
	for _, tc := range []struct {
		name  string
		rules Rules
	}{{"default", Rules{}}, {"custom", custom}} {
		t.Run(tc.name, func(t *testing.T) {
			gated, err := New(tc.rules)
			if err != nil {
				t.Fatal(err)
			}
			slow, _ := New(tc.rules)
			for i := range slow.gate {
				slow.gate[i] = gateSlow
			}
			inputs := [][2]string{}
			for _, x := range texts {
				inputs = append(inputs, [2]string{x, x}, [2]string{"", x})
			}
			if tc.name == "default" {
				for _, in := range goldenInputs(t) {
					inputs = append(inputs, [2]string{in.system, in.user})
				}
			}
			fast := 0
			for _, g := range gated.gate {
				if g != gateSlow {
					fast++
				}
			}
			if fast == 0 {
				t.Fatal("no run takes the shortcut")
			}
			for _, in := range inputs {
				a, b := gated.run(in[0], in[1]), slow.run(in[0], in[1])
				got := result{append([]hit(nil), a.hits...), append([]negSpan(nil), a.negs...)}
				want := result{append([]hit(nil), b.hits...), append([]negSpan(nil), b.negs...)}
				gated.release(a)
				slow.release(b)
				if d := cmp.Diff(want, got, cmp.AllowUnexported(hit{}, negSpan{})); d != "" {
					t.Fatalf("system %q user %q: hits (-slow +gated):\n%s", in[0], in[1], d)
				}
			}
		})
	}
}
