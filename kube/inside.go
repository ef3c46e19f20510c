package kube

import (
	"context"
	"fmt"
	"io"
	pathpkg "path"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
)

// CopyFrom streams path of Sandbox id's container out as a tar stream,
// made by tar inside it (the box's image has it). Its entries are named
// from path's last element, as Docker's archive names them (/data's are
// data/…), which the archive format expects.
func (e *Engine) CopyFrom(ctx context.Context, id, path string) (io.ReadCloser, error) {
	pr, pw := io.Pipe()
	clean := pathpkg.Clean(path)
	go func() {
		var stderr limitedBuffer
		code, err := e.Exec(ctx, id, engine.ExecOptions{Cmd: []string{"tar", "-c", "-f", "-", "-C", pathpkg.Dir(clean), pathpkg.Base(clean)}, Stdout: pw, Stderr: &stderr})
		if err == nil && code != 0 {
			err = fmt.Errorf("reading %s of %s: tar exited %d: %s", path, id, code, stderr.String())
		}
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// CopyTo unpacks the tar stream content into dir of Sandbox id's container.
func (e *Engine) CopyTo(ctx context.Context, id, dir string, content io.Reader) error {
	var stderr limitedBuffer
	code, err := e.Exec(ctx, id, engine.ExecOptions{Cmd: []string{"tar", "-x", "-f", "-", "-C", dir}, Stdin: content, Stderr: &stderr})
	if err == nil && code != 0 {
		err = fmt.Errorf("writing %s of %s: tar exited %d: %s", dir, id, code, stderr.String())
	}
	return err
}

// limitedBuffer keeps the first 4 KiB written to it.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 4096 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }

// CreateLeaseMark creates lease mark m as a ConfigMap of its own name:
// the API server makes an object of a name at most once, so creating the
// claim's is the claim, atomic for everyone who reaches the cluster.
func (e *Engine) CreateLeaseMark(ctx context.Context, image string, m engine.LeaseMark) (string, error) {
	labels := map[string]string{}
	ann := map[string]string{NameAnnotation: m.Name}
	for k, v := range compose.LeaseLabels(m) {
		if len(v) <= 63 && k != compose.LeaseExpiresLabel && k != compose.LeaseStartedLabel && k != compose.LeaseByLabel && k != compose.LeaseHolderLabel {
			labels[k] = v
		} else {
			ann[k] = v
		}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: objectName(m.Name), Namespace: e.namespace, Labels: labels, Annotations: ann}}
	got, err := e.core.CoreV1().ConfigMaps(e.namespace).Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("lease mark %s: %w", m.Name, engine.ErrLeaseTaken)
	}
	if err != nil {
		return "", e.apiError("making lease mark "+m.Name, err)
	}
	return leaseMarkPrefix + got.Name, nil
}

// leaseMarkPrefix starts a lease mark's ID: the contract removes marks as
// containers (RemoveContainer), by ID.
const leaseMarkPrefix = "lease-mark/"

// removeLeaseMark removes the lease mark whose ConfigMap is named name.
func (e *Engine) removeLeaseMark(ctx context.Context, name string) error {
	err := e.core.CoreV1().ConfigMaps(e.namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return e.apiError("removing lease mark "+name, err)
	}
	return nil
}
