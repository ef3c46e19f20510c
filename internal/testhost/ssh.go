package testhost

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// startSSH runs an sshd in the engine's namespace on ADDR:22 with host keys,
// authorized_keys, a client key and known_hosts all made here, and a
// directory with an ssh that uses them (Engine.SSHPath): the client side
// stays the real ssh, only its configuration is the test's.
func (e *Engine) startSSH() error {
	sshDir := filepath.Join(e.dir, "ssh")
	if err := os.MkdirAll(filepath.Join(sshDir, "bin"), 0o700); err != nil {
		return err
	}
	hostKey := filepath.Join(sshDir, "host_ed25519")
	clientKey := filepath.Join(sshDir, "id_ed25519")
	for _, k := range []string{hostKey, clientKey} {
		if err := run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "boxes-test", "-f", k); err != nil {
			return err
		}
	}
	hostPub, err := os.ReadFile(hostKey + ".pub")
	if err != nil {
		return err
	}
	clientPub, err := os.ReadFile(clientKey + ".pub")
	if err != nil {
		return err
	}
	files := map[string]string{
		"authorized_keys": string(clientPub),
		"known_hosts":     e.Addr + " " + string(hostPub),
		"sshd_config": strings.Join([]string{
			"ListenAddress " + e.Addr + ":22",
			"HostKey " + hostKey,
			"PidFile " + filepath.Join(sshDir, "sshd.pid"),
			"AuthorizedKeysFile " + filepath.Join(sshDir, "authorized_keys"),
			"StrictModes no",
			"PermitRootLogin prohibit-password",
			"PasswordAuthentication no",
			"KbdInteractiveAuthentication no",
			"UsePAM no",
			"",
		}, "\n"),
		"ssh_config": strings.Join([]string{
			"Host *",
			"  IdentityFile " + clientKey,
			"  IdentitiesOnly yes",
			"  UserKnownHostsFile " + filepath.Join(sshDir, "known_hosts"),
			"  GlobalKnownHostsFile /dev/null",
			"  StrictHostKeyChecking yes",
			"",
		}, "\n"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(sshDir, name), []byte(data), 0o600); err != nil {
			return err
		}
	}
	sshBin, err := exec.LookPath("ssh")
	if err != nil {
		return err
	}
	wrapper := fmt.Sprintf("#!/bin/sh\nexec %s -F %s \"$@\"\n", sshBin, filepath.Join(sshDir, "ssh_config"))
	if err := os.WriteFile(filepath.Join(sshDir, "bin", "ssh"), []byte(wrapper), 0o700); err != nil {
		return err
	}
	if err := e.runSSHD(filepath.Join(sshDir, "sshd_config")); err != nil {
		return err
	}
	e.SSH = "ssh://root@" + e.Addr + strings.TrimPrefix(e.Socket, "unix://")
	e.SSHPath = filepath.Join(sshDir, "bin")
	return nil
}

// runSSHD starts sshd on config in the engine's namespace and waits until
// it listens on ADDR:22.
func (e *Engine) runSSHD(config string) error {
	// sshd insists on its privilege separation directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		return err
	}
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		return err
	}
	sshd, _ = filepath.Abs(sshd)
	logFile, err := os.Create(filepath.Join(e.dir, "sshd.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command("nsenter", "--net=/var/run/netns/"+e.Name, sshd, "-D", "-e", "-f", config)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return err
	}
	e.track(cmd)
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(context.Background(), "tcp", e.Addr+":22")
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) || !alive(cmd.Process.Pid) {
			return fmt.Errorf("sshd does not listen on %s:22: %w", e.Addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}
