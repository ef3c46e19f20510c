// Package testhost starts extra Docker engines for integration tests, each
// behaving like a remote host: its own network namespace and address, its own
// engine ID, optionally a TLS listener and an sshd. Everything it starts is
// stopped by PID and everything it makes is removed when the test ends, also
// when it fails.
//
// It needs root, iproute2, util-linux (nsenter, unshare), dockerd and, for
// SSH, openssh-server; without them Start skips the test.
package testhost

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
)

// Options choose what a started engine offers besides its unix socket.
type Options struct {
	// TLS listens on tcp://ADDR:2376 with mutual TLS; the client's material is in Engine.TLSDir.
	TLS bool
	// SSH runs an sshd on ADDR:22 that lets root in with a key made for the test.
	SSH bool
	// Images are streamed from the local engine (image save into image
	// load), or copied from the data root of an engine that was (images.go):
	// a test binary asking for them calls RemoveTemplates from its TestMain.
	Images []string
	// Runtimes are OCI runtimes registered in the engine's daemon
	// configuration by name, besides its own runc (e.g. "runsc" for gVisor).
	Runtimes map[string]Runtime
}

// Runtime is one entry of a daemon configuration's "runtimes".
type Runtime struct {
	Path string   `json:"path"`
	Args []string `json:"runtimeArgs,omitempty"`
}

// Engine is one started extra engine.
type Engine struct {
	// Name is the engine's namespace name, also used for its files.
	Name string
	// Addr is the namespace's address, the "remote host's" address.
	Addr string
	// HostAddr is the address of this machine's end of the veth pair.
	HostAddr string
	// Socket is the engine's unix:// socket URL.
	Socket string
	// TCP is tcp://ADDR:2376 (with Options.TLS).
	TCP string
	// TLSDir holds the client's ca.pem, cert.pem and key.pem (with Options.TLS).
	TLSDir string
	// SSH is ssh://root@ADDR/SOCKET (with Options.SSH).
	SSH string
	// SSHPath is a directory to put first on PATH: its ssh uses the test's key
	// and known_hosts (with Options.SSH).
	SSHPath string
	// ID is the engine ID docker info reports.
	ID string
	// StartTime is how long the engine took from exec to answering its API.
	StartTime time.Duration

	dir      string // files: config, certs, keys, logs, data-root
	seed     string // the images' template the data root starts as (images.go)
	run      string // short runtime directory under /run for sockets and exec-root
	veth     string
	cgroup   string
	mountNS  string   // the dockerd's mount namespace, "mnt:[inode]"
	launch   []string // nsenter's arguments that start the dockerd
	dockerd  *exec.Cmd
	procs    []*exec.Cmd
	mu       sync.Mutex
	apiCache *client.Client
}

var nextIndex = struct {
	sync.Mutex
	n int
}{}

// Start brings up an extra engine and registers its teardown with t.Cleanup.
// It skips the test where the machine cannot run one.
func Start(t testing.TB, opts Options) *Engine {
	t.Helper()
	if testing.Short() {
		t.Skip("an extra Docker engine is not started under -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("starting an extra Docker engine needs root")
	}
	tools := []string{"ip", "nsenter", "unshare", "dockerd", "mount"}
	if opts.SSH {
		tools = append(tools, "sshd", "ssh", "ssh-keygen")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("starting an extra Docker engine needs %s (see .ci/run)", tool)
		}
	}
	driver, err := localStorageDriver()
	if err != nil {
		t.Skipf("no local Docker engine to match: %v", err)
	}

	var tmpl, key string
	var ids []string
	if len(opts.Images) > 0 {
		if tmpl, key, ids, err = imageTemplate(opts.Images); err != nil {
			t.Fatalf("testhost: %v", err)
		}
	}
	e := &Engine{seed: tmpl}
	t.Cleanup(func() { e.stop(t) })
	if err := e.network(); err != nil {
		t.Fatalf("testhost: %v", err)
	}
	if err := e.start(driver, opts); err != nil {
		t.Fatalf("testhost %s: %v\n%s", e.Name, err, e.logTail())
	}
	if len(opts.Images) > 0 {
		if tmpl == "" {
			err = e.streamImages(opts.Images, key)
		}
		if err == nil {
			err = e.checkImages(context.Background(), opts.Images, ids)
		}
		if err != nil {
			t.Fatalf("testhost %s: %v\n%s", e.Name, err, e.logTail())
		}
	}
	if opts.SSH {
		if err := e.startSSH(); err != nil {
			t.Fatalf("testhost %s: sshd: %v\n%s", e.Name, err, tail(filepath.Join(e.dir, "sshd.log")))
		}
	}
	return e
}

func localStorageDriver() (string, error) {
	c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return "", err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := c.Info(ctx)
	if err != nil {
		return "", err
	}
	return info.Driver, nil
}

// network makes the namespace and the veth pair, picking a free private /24.
func (e *Engine) network() error {
	nextIndex.Lock()
	defer nextIndex.Unlock()
	base := os.Getpid()%150 + 50
	for try := 0; try < 50; try++ {
		n := (base+nextIndex.n+try)%200 + 20
		name := fmt.Sprintf("bxth%d", n)
		if _, err := os.Stat("/var/run/netns/" + name); err == nil {
			continue
		}
		if out, _ := exec.Command("ip", "route", "show", fmt.Sprintf("10.213.%d.0/24", n)).Output(); len(bytes.TrimSpace(out)) > 0 {
			continue
		}
		if err := run("ip", "netns", "add", name); err != nil {
			continue
		}
		nextIndex.n += try + 1
		e.Name = name
		e.veth = name + "h"
		e.HostAddr = fmt.Sprintf("10.213.%d.1", n)
		e.Addr = fmt.Sprintf("10.213.%d.2", n)
		steps := [][]string{
			{"ip", "link", "add", e.veth, "type", "veth", "peer", "name", name + "n"},
			{"ip", "link", "set", name + "n", "netns", name},
			{"ip", "addr", "add", e.HostAddr + "/24", "dev", e.veth},
			{"ip", "link", "set", e.veth, "up"},
			{"ip", "-n", name, "addr", "add", e.Addr + "/24", "dev", name + "n"},
			{"ip", "-n", name, "link", "set", name + "n", "up"},
			{"ip", "-n", name, "link", "set", "lo", "up"},
			{"ip", "-n", name, "route", "add", "default", "via", e.HostAddr},
		}
		for _, s := range steps {
			if err := run(s...); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("no free network namespace name / subnet found")
}

func (e *Engine) start(driver string, opts Options) error {
	var err error
	if e.dir, err = os.MkdirTemp("", "boxes-testhost-"+e.Name+"-"); err != nil {
		return err
	}
	e.run = "/run/boxes-" + e.Name
	if err := os.MkdirAll(e.run, 0o700); err != nil {
		return err
	}
	etc := filepath.Join(e.dir, "etc-docker")
	if err := os.MkdirAll(etc, 0o700); err != nil {
		return err
	}
	daemon := map[string]any{"storage-driver": driver, "mtu": 1400}
	if len(opts.Runtimes) > 0 {
		daemon["runtimes"] = opts.Runtimes
	}
	cfg, _ := json.Marshal(daemon)
	cfgFile := filepath.Join(e.dir, "daemon.json")
	if err := os.WriteFile(cfgFile, cfg, 0o600); err != nil {
		return err
	}
	sock := filepath.Join(e.run, "docker.sock")
	e.Socket = "unix://" + sock
	e.cgroup = "boxes-" + e.Name
	args := []string{
		"-H", e.Socket,
		"--data-root", filepath.Join(e.dir, "data"),
		"--exec-root", filepath.Join(e.run, "exec"),
		"--pidfile", filepath.Join(e.run, "docker.pid"),
		"--cgroup-parent", e.cgroup,
		"--config-file", cfgFile,
	}
	if opts.TLS {
		server, clientDir, err := WriteTLS(e.dir, e.Addr)
		if err != nil {
			return err
		}
		e.TLSDir = clientDir
		e.TCP = "tcp://" + e.Addr + ":2376"
		args = append(args, "-H", e.TCP, "--tlsverify",
			"--tlscacert", filepath.Join(server, "ca.pem"),
			"--tlscert", filepath.Join(server, "cert.pem"),
			"--tlskey", filepath.Join(server, "key.pem"))
	}
	// Its own /etc/docker gives it its own key.json, so its own engine ID;
	// the bind mount lives in a mount namespace of its own.
	script := `mount --bind "$1" /etc/docker && shift && exec dockerd "$@"`
	e.launch = append([]string{"--net=/var/run/netns/" + e.Name, "unshare", "--mount", "--propagation", "slave", "sh", "-c", script, "sh", etc}, args...)
	c, err := client.NewClientWithOpts(client.WithHost(e.Socket), client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	e.apiCache = c
	if e.seed != "" {
		if err := e.seedData(e.seed); err != nil {
			return err
		}
	}
	if err := e.startDockerd(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := c.Info(ctx)
	if err != nil {
		return err
	}
	e.ID = info.ID
	return nil
}

// startDockerd runs the engine's dockerd (again, after Stop: same data,
// same namespace) and waits until it answers.
func (e *Engine) startDockerd() error {
	logFile, err := os.OpenFile(filepath.Join(e.dir, "dockerd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command("nsenter", e.launch...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	e.track(cmd)
	e.mu.Lock()
	e.dockerd = cmd
	e.mu.Unlock()
	c := e.apiCache
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := c.Ping(ctx)
		cancel()
		if err == nil {
			break
		}
		if cmd.ProcessState != nil || time.Now().After(deadline) || !alive(cmd.Process.Pid) {
			return fmt.Errorf("dockerd did not answer: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.StartTime = time.Since(began)
	if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", cmd.Process.Pid)); err == nil {
		e.mountNS = ns
	}
	return nil
}

// Stop stops the engine's dockerd as its service manager would (SIGTERM,
// SIGKILL after 30 s): its API goes away at once, its containers are
// stopped. The namespace, the sshd and the data stay, for Restart.
func (e *Engine) Stop() {
	e.mu.Lock()
	cmd := e.dockerd
	e.mu.Unlock()
	if cmd != nil {
		terminate(cmd.Process.Pid, 30*time.Second)
	}
}

// Restart starts the engine's dockerd again after Stop, on the same data.
func (e *Engine) Restart() error {
	if err := e.startDockerd(); err != nil {
		return fmt.Errorf("testhost %s: restarting dockerd: %w\n%s", e.Name, err, e.logTail())
	}
	return nil
}

// TrustRegistry has the engine trust the registry at addr (HOST:PORT)
// under the CA in caPEM, as /etc/docker/certs.d/ADDR/ca.crt does on a
// machine (the engine sees its own /etc/docker, and reads it at each pull).
func (e *Engine) TrustRegistry(addr string, caPEM []byte) error {
	dir := filepath.Join(e.dir, "etc-docker", "certs.d", addr)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "ca.crt"), caPEM, 0o644)
}

// Client is an API client of the engine over its unix socket.
func (e *Engine) Client() *client.Client { return e.apiCache }

// StreamImage copies ref from the local engine into this one (image save
// into image load) and checks the image ID survived the trip.
func (e *Engine) StreamImage(ctx context.Context, ref string) error {
	local, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer local.Close()
	want, err := local.ImageInspect(ctx, ref)
	if err != nil {
		return fmt.Errorf("streaming %s: %w", ref, err)
	}
	r, err := local.ImageSave(ctx, []string{ref})
	if err != nil {
		return fmt.Errorf("saving %s: %w", ref, err)
	}
	defer r.Close()
	resp, err := e.apiCache.ImageLoad(ctx, r)
	if err != nil {
		return fmt.Errorf("loading %s: %w", ref, err)
	}
	_, err = bytes.NewBuffer(nil).ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("loading %s: %w", ref, err)
	}
	got, err := e.apiCache.ImageInspect(ctx, ref)
	if err != nil {
		return fmt.Errorf("loaded %s: %w", ref, err)
	}
	if got.ID != want.ID {
		return fmt.Errorf("loaded %s as %s, want %s", ref, got.ID, want.ID)
	}
	return nil
}

func (e *Engine) track(cmd *exec.Cmd) {
	e.mu.Lock()
	e.procs = append(e.procs, cmd)
	e.mu.Unlock()
	go func() { _ = cmd.Wait() }()
}

// stop removes the engine's containers, stops every process by PID (those
// it started and any left in its namespaces), then deletes the namespace,
// the veth pair, the cgroups and the files.
func (e *Engine) stop(t testing.TB) {
	if e.apiCache != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if cs, err := e.apiCache.ContainerList(ctx, container.ListOptions{All: true}); err == nil {
			for _, c := range cs {
				_ = e.apiCache.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
			}
		}
		cancel()
		e.apiCache.Close()
	}
	e.mu.Lock()
	procs := e.procs
	e.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		terminate(procs[i].Process.Pid, 20*time.Second)
	}
	// Whatever the engine left behind (containerd, shims, fuse-overlayfs,
	// a gVisor sandbox and gofer) is found by its namespaces or its cgroup
	// parent: they are this engine's alone.
	for _, pid := range e.strayPIDs() {
		terminate(pid, 5*time.Second)
	}
	if e.Name != "" {
		if err := run("ip", "netns", "del", e.Name); err != nil {
			t.Logf("testhost: %v", err)
		}
		if _, err := os.Stat("/sys/class/net/" + e.veth); err == nil {
			_ = run("ip", "link", "del", e.veth)
		}
	}
	if e.cgroup != "" {
		matches, _ := filepath.Glob("/sys/fs/cgroup/*/" + e.cgroup)
		for _, dir := range matches {
			removeCgroup(dir)
		}
	}
	if e.run != "" {
		_ = os.RemoveAll(e.run)
	}
	if e.dir != "" {
		if t.Failed() {
			t.Logf("testhost %s: last dockerd log lines:\n%s", e.Name, e.logTail())
		}
		if err := os.RemoveAll(e.dir); err != nil {
			t.Logf("testhost: removing %s: %v", e.dir, err)
		}
	}
}

// strayPIDs are the processes still in the engine's network or mount
// namespace or under its cgroup parent. A runtime such as runsc runs its
// sandbox in namespaces of its own, but in the container's cgroup.
func (e *Engine) strayPIDs() []int {
	var netNS string
	if e.Name != "" {
		if fi, err := os.Stat("/var/run/netns/" + e.Name); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				netNS = fmt.Sprintf("net:[%d]", st.Ino)
			}
		}
	}
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, d := range entries {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		net, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
		mnt, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid))
		if (netNS != "" && net == netNS) || (e.mountNS != "" && mnt == e.mountNS) || e.inCgroup(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// inCgroup reports whether pid is in the engine's cgroup parent or below it.
func (e *Engine) inCgroup(pid int) bool {
	if e.cgroup == "" {
		return false
	}
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	for _, line := range strings.Split(string(data), "\n") {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && (parts[2] == "/"+e.cgroup || strings.HasPrefix(parts[2], "/"+e.cgroup+"/")) {
			return true
		}
	}
	return false
}

func removeCgroup(dir string) {
	subs, _ := os.ReadDir(dir)
	for _, s := range subs {
		if s.IsDir() {
			removeCgroup(filepath.Join(dir, s.Name()))
		}
	}
	_ = syscall.Rmdir(dir)
}

// terminate sends SIGTERM, then SIGKILL after grace, and waits for pid to go.
func terminate(pid int, grace time.Duration) {
	if !alive(pid) {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if alive(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		for i := 0; i < 100 && alive(pid); i++ {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// alive reports whether pid is a process that has not ended (a zombie has).
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	if i := bytes.LastIndexByte(data, ')'); i >= 0 && i+2 < len(data) {
		return data[i+2] != 'Z'
	}
	return true
}

func (e *Engine) logTail() string {
	if e.dir == "" {
		return ""
	}
	return tail(filepath.Join(e.dir, "dockerd.log"))
}

func tail(file string) string {
	data, _ := os.ReadFile(file)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}

func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}
