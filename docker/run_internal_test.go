package docker

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
)

// The engine's answer to the removal of a container it is removing already
// (409, as a real engine words it) is one the room sweep goes past; other
// conflicts and errors are not.
func TestRemovalUnderway(t *testing.T) {
	for msg, want := range map[string]bool{
		"removal of container 0123 is already in progress":                                                         true,
		"You cannot remove a running container 0123. Stop the container before attempting removal or force remove": false,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"message":"` + msg + `"}`))
		}))
		api, err := client.NewClientWithOpts(client.WithHost("tcp://"+srv.Listener.Addr().String()), client.WithVersion("1.41"))
		if err != nil {
			t.Fatal(err)
		}
		err = api.ContainerRemove(context.Background(), "0123", container.RemoveOptions{Force: true})
		if err == nil || removalUnderway(err) != want {
			t.Errorf("%q: %v, underway %v, want %v", msg, err, removalUnderway(err), want)
		}
		api.Close()
		srv.Close()
	}
	if removalUnderway(context.Canceled) {
		t.Error("a cancelled request counted as a removal underway")
	}
}
