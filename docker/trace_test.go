package docker

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

type stubTripper struct{ err error }

func (s stubTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	time.Sleep(2 * time.Millisecond)
	if s.err != nil {
		return nil, s.err
	}
	return &http.Response{StatusCode: 200, Request: r}, nil
}

// Every request but the version ping is counted and, with a trace, told
// of with its path unversioned, its start, its time and its error.
func TestCountingTransportTraces(t *testing.T) {
	var calls atomic.Int64
	var got []Call
	refused := errors.New("refused")
	for _, c := range []struct {
		url string
		err error
	}{
		{"http://docker/v1.41/_ping", nil},
		{"http://docker/v1.41/containers/create?name=x", nil},
		{"http://docker/info", nil},
		{"http://docker/v1.44/networks/n1/connect", refused},
	} {
		tr := countingTransport{next: stubTripper{c.err}, calls: &calls, trace: func(c Call) { got = append(got, c) }}
		r, _ := http.NewRequest(http.MethodPost, c.url, nil)
		before := time.Now()
		_, err := tr.RoundTrip(r)
		if !errors.Is(err, c.err) {
			t.Fatalf("%s: err %v", c.url, err)
		}
		if n := len(got); n > 0 && got[n-1].Start.Before(before) {
			t.Errorf("%s: started before it was sent", c.url)
		}
	}
	if calls.Load() != 3 {
		t.Errorf("%d calls counted, want 3 (the ping is not one)", calls.Load())
	}
	want := []string{"/containers/create", "/info", "/networks/n1/connect"}
	if len(got) != len(want) {
		t.Fatalf("traced %+v", got)
	}
	for i, c := range got {
		if c.Path != want[i] || c.Method != http.MethodPost || c.Took < 2*time.Millisecond {
			t.Errorf("call %d: %+v, want %s taking 2 ms or more", i, c, want[i])
		}
	}
	if !errors.Is(got[2].Err, refused) || got[0].Err != nil {
		t.Errorf("errors traced: %v, %v", got[0].Err, got[2].Err)
	}
}
