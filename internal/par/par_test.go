package par_test

import (
	"sync/atomic"
	"testing"

	"github.com/hermes-box/boxes/internal/par"
)

func TestEachCallsEveryIndexOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 1000} {
		seen := make([]atomic.Int32, n)
		par.Each(n, func(i int) { seen[i].Add(1) })
		for i := range seen {
			if got := seen[i].Load(); got != 1 {
				t.Fatalf("n=%d: index %d called %d times, want 1", n, i, got)
			}
		}
	}
}
