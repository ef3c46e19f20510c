package kube

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// dockerConfig makes DOCKER_CONFIG a configuration of the test's holding
// auths (registry: "user:password", or a raw entry when it starts with {).
func dockerConfig(t *testing.T, auths map[string]string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	entries := map[string]json.RawMessage{}
	for r, a := range auths {
		if strings.HasPrefix(a, "{") {
			entries[r] = json.RawMessage(a)
			continue
		}
		entries[r], _ = json.Marshal(map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(a))})
	}
	data, _ := json.Marshal(map[string]any{"auths": entries})
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

const pulledRef = "reg.example:5000/hbl@sha256:" + "abababababababababababababababababababababababababababababababab"

// PullImage gives the nodes this machine's credentials for the
// reference's registry as a labelled pull secret, which the pods of the
// image name; the secret holds what the kubelet reads, and is updated when
// the credentials change.
func TestPullImageMakesAPullSecret(t *testing.T) {
	e, core := helperEngine(t, corev1.ContainerState{})
	ctx := context.Background()
	dockerConfig(t, map[string]string{"reg.example:5000": "alice:pw1", "other.example": "bob:x"})
	if err := e.PullImage(ctx, pulledRef, "sha256:img"); err != nil {
		t.Fatal(err)
	}
	list, err := core.CoreV1().Secrets(helperNS).List(ctx, metav1.ListOptions{LabelSelector: PullSecretLabel + "=1"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("pull secrets: %v %+v", err, list)
	}
	s := list.Items[0]
	if s.Type != corev1.SecretTypeDockerConfigJson || s.Annotations[registryAnnotation] != "reg.example:5000" || s.Labels["hermes-box-lite"] != "1" {
		t.Errorf("secret: %+v", s.ObjectMeta)
	}
	var cfg struct {
		Auths map[string]struct{ Username, Password, Auth string }
	}
	if err := json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &cfg); err != nil {
		t.Fatal(err)
	}
	got := cfg.Auths["reg.example:5000"]
	if len(cfg.Auths) != 1 || got.Username != "alice" || got.Password != "pw1" || got.Auth != base64.StdEncoding.EncodeToString([]byte("alice:pw1")) {
		t.Errorf(".dockerconfigjson: %s", s.Data[corev1.DockerConfigJsonKey])
	}
	if refs := e.imagePullSecrets("sha256:img"); len(refs) != 1 || refs[0].Name != s.Name {
		t.Errorf("the image's pods name %+v", refs)
	}
	if refs := e.imagePullSecrets("sha256:other"); refs != nil {
		t.Errorf("another image's pods name %+v", refs)
	}

	dockerConfig(t, map[string]string{"reg.example:5000": "alice:pw2"})
	if err := e.PullImage(ctx, pulledRef, "sha256:img"); err != nil {
		t.Fatal(err)
	}
	again, _ := core.CoreV1().Secrets(helperNS).Get(ctx, s.Name, metav1.GetOptions{})
	if !strings.Contains(string(again.Data[corev1.DockerConfigJsonKey]), `"password":"pw2"`) {
		t.Errorf("the secret after a new login: %s", again.Data[corev1.DockerConfigJsonKey])
	}
}

// With no credentials for the registry here, no pull secret is made and
// none removed: one boxes made before is still named (other boxes' pods
// pull with it), a Secret of that name not boxes' is not, and without one
// the nodes pull anonymously.
func TestPullImageWithoutCredentials(t *testing.T) {
	ctx := context.Background()
	dockerConfig(t, map[string]string{"other.example": "bob:x"})
	e, core := helperEngine(t, corev1.ContainerState{})
	if err := e.PullImage(ctx, pulledRef, "sha256:img"); err != nil {
		t.Fatal(err)
	}
	if list, _ := core.CoreV1().Secrets(helperNS).List(ctx, metav1.ListOptions{}); len(list.Items) != 0 {
		t.Errorf("secrets made: %+v", list.Items)
	}
	if refs := e.imagePullSecrets("sha256:img"); refs != nil {
		t.Errorf("the image's pods name %+v", refs)
	}

	dockerConfig(t, map[string]string{"reg.example:5000": "alice:pw"})
	if err := e.PullImage(ctx, pulledRef, "sha256:img"); err != nil {
		t.Fatal(err)
	}
	made := e.imagePullSecrets("sha256:img")
	dockerConfig(t, map[string]string{"other.example": "bob:x"})
	e2 := &Engine{host: e.host, cfg: e.cfg, namespace: helperNS, core: core, refs: map[string]string{}, pullSecrets: map[string]string{}}
	if err := e2.PullImage(ctx, pulledRef, "sha256:img"); err != nil {
		t.Fatal(err)
	}
	if list, _ := core.CoreV1().Secrets(helperNS).List(ctx, metav1.ListOptions{}); len(list.Items) != 1 {
		t.Errorf("secrets: %+v, want boxes' earlier one kept", list.Items)
	}
	if refs := e2.imagePullSecrets("sha256:img"); len(made) != 1 || len(refs) != 1 || refs[0] != made[0] {
		t.Errorf("the image's pods name %+v, want the earlier %+v", refs, made)
	}

	// A Secret of that name that boxes did not make is not named.
	other, _ := core.CoreV1().Secrets(helperNS).Get(ctx, made[0].Name, metav1.GetOptions{})
	other.Labels = nil
	if _, err := core.CoreV1().Secrets(helperNS).Update(ctx, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e2.PullImage(ctx, pulledRef, "sha256:img"); err != nil {
		t.Fatal(err)
	}
	if refs := e2.imagePullSecrets("sha256:img"); refs != nil {
		t.Errorf("the image's pods name a Secret boxes did not make: %+v", refs)
	}
}

// Bad inputs: a token where the kubelet takes a user and password, and a
// reference without a digest, are refused before anything is made.
func TestPullImageRefusals(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, ref, auth, want string
	}{
		{"a token", pulledRef, `{"identitytoken": "tok"}`, "holds a token for registry reg.example:5000, not a user and password"},
		{"no digest", "reg.example:5000/hbl:test", "alice:pw", "a cluster pulls by digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, core := helperEngine(t, corev1.ContainerState{})
			dockerConfig(t, map[string]string{"reg.example:5000": tc.auth})
			err := e.PullImage(ctx, tc.ref, "sha256:img")
			var he *HostError
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &he) {
				t.Fatalf("err = %v", err)
			}
			if list, _ := core.CoreV1().Secrets(helperNS).List(ctx, metav1.ListOptions{}); len(list.Items) != 0 {
				t.Errorf("secrets made: %+v", list.Items)
			}
			if len(e.refs) != 0 {
				t.Errorf("refs recorded: %v", e.refs)
			}
		})
	}
}
