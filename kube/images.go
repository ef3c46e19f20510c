package kube

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/regcred"
)

// A cluster's nodes pull a box's image from its registry, by the digest
// boxes.lock records (boxes build --push): boxes cannot see what images a
// node holds, so a plan brings the image to a kubernetes: host by that
// reference every time it makes a box there (PullImage), and a lock
// without one is refused for such a host.

// PullImage records ref as where the nodes get image: the reference the
// Sandboxes made next run. ref is pinned by digest, so what runs is the
// image the lock names.
func (e *Engine) PullImage(ctx context.Context, ref, image string) error {
	if !strings.Contains(ref, "@sha256:") {
		return e.fail(fmt.Errorf("image %s: a cluster pulls by digest, and %s has none", image, ref), "boxes build --push records the image's registry reference with its digest")
	}
	secret, err := e.pullSecret(ctx, ref)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.refs[image] = ref
	if secret != "" {
		e.pullSecrets[ref] = secret
	} else {
		delete(e.pullSecrets, ref)
	}
	return nil
}

// A private registry's credentials reach the cluster's nodes as an image
// pull secret: one Secret per registry and namespace, made by boxes from
// the docker configuration of this machine (regcred) each time a plan has
// the cluster pull an image, and named in the pods that run it. Its
// content is never printed and never in a plan.

// PullSecretLabel marks the image pull secrets boxes makes.
const PullSecretLabel = "boxes.pull-secret"

// registryAnnotation is the registry a pull secret holds credentials for.
const registryAnnotation = "boxes.registry"

// pullSecretName is the name of the pull secret for registry: a hash, for
// a registry's name (host:port) is no object name.
func pullSecretName(registry string) string {
	sum := sha256.Sum256([]byte(registry))
	return "boxes-pull-" + hex.EncodeToString(sum[:6])
}

// pullSecret makes or updates the pull secret for ref's registry from the
// docker configuration's credentials and returns its name. With none
// there, it makes none and removes none: one boxes made for the registry
// before (from another machine's login, perhaps) is still named, since
// other boxes' pods pull with it; without one the nodes pull anonymously.
func (e *Engine) pullSecret(ctx context.Context, ref string) (string, error) {
	c, err := regcred.For(ref)
	if err != nil {
		return "", e.fail(fmt.Errorf("image %s: %w", ref, err), "")
	}
	name := pullSecretName(c.Registry)
	secrets := e.core.CoreV1().Secrets(e.namespace)
	if c.Empty() {
		have, err := secrets.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return "", nil
		case err != nil:
			return "", e.apiError("reading the pull secret of registry "+c.Registry, err)
		case have.Labels[PullSecretLabel] != "1":
			return "", nil // not one of boxes'
		}
		return name, nil
	}
	if c.Auth.Username == "" || c.Auth.Password == "" {
		return "", e.fail(fmt.Errorf("image %s: the docker configuration of this machine holds a token for registry %s, not a user and password, and a cluster's nodes pull with a user and password only", ref, c.Registry),
			"docker login "+c.Registry+" with a user and password (a registry's access token as the password works)")
	}
	data, err := dockerConfigJSON(c.Registry, c.Auth.Username, c.Auth.Password)
	if err != nil {
		return "", err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   e.namespace,
			Labels:      map[string]string{compose.ManagedLabel: "1", PullSecretLabel: "1"},
			Annotations: map[string]string{registryAnnotation: c.Registry},
		},
		Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: data},
	}
	if err := e.put(ctx, "pull secret "+name, func() error {
		_, err := secrets.Create(ctx, secret, metav1.CreateOptions{})
		return err
	}, func() error {
		_, err := secrets.Update(ctx, secret, metav1.UpdateOptions{})
		return err
	}); err != nil {
		return "", err
	}
	return name, nil
}

// dockerConfigJSON is a .dockerconfigjson holding user and password for
// registry, as the kubelet reads one.
func dockerConfigJSON(registry, user, password string) ([]byte, error) {
	type entry struct {
		Username string `json:"username"`
		Password string `json:"password"`
		Auth     string `json:"auth"`
	}
	return json.Marshal(map[string]map[string]entry{"auths": {registry: {
		Username: user, Password: password,
		Auth: base64.StdEncoding.EncodeToString([]byte(user + ":" + password)),
	}}})
}

// imagePullSecrets are the pull secrets a pod running image names: the
// one of its reference's registry, if PullImage made one.
func (e *Engine) imagePullSecrets(image string) []corev1.LocalObjectReference {
	e.mu.Lock()
	defer e.mu.Unlock()
	if name, ok := e.pullSecrets[e.refs[image]]; ok {
		return []corev1.LocalObjectReference{{Name: name}}
	}
	return nil
}

// podImage is what a pod runs for image: its registry reference when
// known, else the ID itself, which a node has only if it was given it
// (a test cluster's images are imported into its nodes).
func (e *Engine) podImage(image string) (string, corev1.PullPolicy) {
	e.mu.Lock()
	ref, ok := e.refs[image]
	e.mu.Unlock()
	if ok {
		return ref, corev1.PullIfNotPresent
	}
	return image, corev1.PullNever
}

// withImages is o with each Sandbox's image as the cluster reaches it.
func (e *Engine) withImages(o *objects, p *types.Project) {
	for _, sb := range o.sandboxes {
		c := &sb.Spec.PodTemplate.Spec.Containers[0]
		sb.Spec.PodTemplate.Spec.ImagePullSecrets = e.imagePullSecrets(c.Image)
		c.Image, c.ImagePullPolicy = e.podImage(c.Image)
	}
}
