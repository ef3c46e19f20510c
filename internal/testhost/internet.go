package testhost

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"
)

// The made-up internet's addresses. 198.51.100.0/24 is a documentation range
// no real network routes; 169.254.77.77 stands in for a cloud metadata
// service (the rule under test closes all of 169.254/16). Nothing else is
// routed into the namespace: never 203.0.113.0/24, 192.0.2.0/24 or
// 169.254.169.254, which a machine like this one uses for itself.
const (
	// InternetGateway is this machine's end of the veth pair: a link-local
	// address, so that a made-up internet adds no public address to the
	// machine (a gate closes the machine's public addresses, and one that
	// came and went with a test in another process would change the gate
	// of every box planned meanwhile).
	InternetGateway = "169.254.77.1"
	WebA            = "198.51.100.7"
	WebB            = "198.51.100.9"
	DNSServer       = "198.51.100.53"
	Metadata        = "169.254.77.77"
)

// Internet is a network namespace playing the internet for network-rule
// tests: web servers on WebA and WebB (ports 80 and 8080) and Metadata (port
// 80), each answering "hello from ADDR:PORT" and recording what it was sent,
// and a DNS server on DNSServer answering the names the test gives it. The
// namespace, its veth pair and its route are removed when the test ends.
type Internet struct {
	NS   string
	veth string

	mu    sync.Mutex
	names map[string]netip.Addr
	seen  []Seen
}

// Seen is one request a server of the made-up internet answered.
type Seen struct {
	Server string // ADDR:PORT
	Host   string
	Path   string
	Header http.Header
}

// StartInternet makes the namespace and starts its servers; names maps test
// host names (without the trailing dot) to the addresses its DNS gives them.
// It skips the test where the machine cannot make one.
func StartInternet(t testing.TB, names map[string]string) *Internet {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a made-up internet needs root (network namespaces)")
	}
	// One made-up internet at a time on this machine, whichever test
	// process asks: they would route the same addresses.
	unlock, err := lockInternet()
	if err != nil {
		t.Fatalf("made-up internet: %v", err)
	}
	t.Cleanup(unlock)
	in := &Internet{names: map[string]netip.Addr{}}
	for n, a := range names {
		in.SetName(n, a)
	}
	t.Cleanup(func() { in.stop(t) })
	if err := in.network(); err != nil {
		t.Fatalf("made-up internet: %v", err)
	}
	for _, addr := range []string{WebA + ":80", WebA + ":8080", WebB + ":80", WebB + ":8080", Metadata + ":80"} {
		l, err := ListenIn(in.NS, "tcp", addr)
		if err != nil {
			t.Fatalf("made-up internet: %v", err)
		}
		srv := &http.Server{Handler: in.handler(addr), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(l) }()
		t.Cleanup(func() { _ = srv.Close() })
	}
	pc, err := listenPacketIn(in.NS, DNSServer+":53")
	if err != nil {
		t.Fatalf("made-up internet: %v", err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	go in.serveDNS(pc)
	return in
}

// SetName points a test name at an address (a later call rebinds it).
func (in *Internet) SetName(name, addr string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.names[strings.TrimSuffix(strings.ToLower(name), ".")] = netip.MustParseAddr(addr)
}

// Seen returns the requests the servers answered so far.
func (in *Internet) Seen() []Seen {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]Seen(nil), in.seen...)
}

func (in *Internet) handler(addr string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in.mu.Lock()
		in.seen = append(in.seen, Seen{Server: addr, Host: r.Host, Path: r.URL.Path, Header: r.Header.Clone()})
		in.mu.Unlock()
		fmt.Fprintf(w, "hello from %s\n", addr)
	})
}

// internetLock is the lock file a made-up internet holds while it exists.
const internetLock = "/run/boxes-made-up-internet.lock"

// lockInternet waits for the made-up internet another test process holds,
// then holds it until unlock; a process that dies releases it.
func lockInternet() (unlock func(), err error) {
	f, err := os.OpenFile(internetLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// network makes the namespace with its addresses, the veth pair and the
// routes: 198.51.100.0/24 and Metadata/32 into the namespace, nothing else.
// Each end reaches the other's gateway address by a route to the link.
func (in *Internet) network() error {
	if out, _ := execOutput("ip", "route", "show", "198.51.100.0/24"); strings.TrimSpace(out) != "" {
		return fmt.Errorf("198.51.100.0/24 is already routed here (%s): another made-up internet?", strings.TrimSpace(out))
	}
	for n := 0; n < 50; n++ {
		name := fmt.Sprintf("bxin%d", (os.Getpid()+n)%1000)
		if _, err := os.Stat("/var/run/netns/" + name); err == nil {
			continue
		}
		if err := run("ip", "netns", "add", name); err != nil {
			continue
		}
		in.NS, in.veth = name, name+"h"
		break
	}
	if in.NS == "" {
		return errors.New("no free namespace name")
	}
	peer := in.NS + "n"
	steps := [][]string{
		{"ip", "link", "add", in.veth, "type", "veth", "peer", "name", peer},
		{"ip", "link", "set", peer, "netns", in.NS},
		{"ip", "addr", "add", InternetGateway + "/32", "dev", in.veth},
		{"ip", "link", "set", in.veth, "up"},
		{"ip", "route", "add", "198.51.100.0/24", "dev", in.veth},
		{"ip", "route", "add", Metadata + "/32", "dev", in.veth},
		{"ip", "-n", in.NS, "link", "set", "lo", "up"},
		{"ip", "-n", in.NS, "link", "set", peer, "up"},
		{"ip", "-n", in.NS, "route", "add", InternetGateway + "/32", "dev", peer},
	}
	for _, a := range []string{WebA + "/24", WebB + "/24", DNSServer + "/24", Metadata + "/32"} {
		steps = append(steps, []string{"ip", "-n", in.NS, "addr", "add", a, "dev", peer})
	}
	steps = append(steps, []string{"ip", "-n", in.NS, "route", "add", "default", "via", InternetGateway, "src", WebA})
	for _, s := range steps {
		if err := run(s...); err != nil {
			return err
		}
	}
	return nil
}

func (in *Internet) stop(t testing.TB) {
	if in.NS == "" {
		return
	}
	if err := run("ip", "netns", "del", in.NS); err != nil {
		t.Logf("made-up internet: %v", err)
	}
	if _, err := os.Stat("/sys/class/net/" + in.veth); err == nil {
		_ = run("ip", "link", "del", in.veth)
	}
}

// serveDNS answers A queries for the test names from the current table and
// refuses everything else, until pc is closed.
func (in *Internet) serveDNS(pc net.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if reply, ok := in.answer(buf[:n]); ok {
			_, _ = pc.WriteTo(reply, from)
		}
	}
}

func (in *Internet) answer(query []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	in.mu.Lock()
	addr, known := in.names[strings.TrimSuffix(strings.ToLower(q.Name.String()), ".")]
	in.mu.Unlock()
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RCode: dnsmessage.RCodeSuccess}
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	_ = b.StartQuestions()
	_ = b.Question(q)
	_ = b.StartAnswers()
	if known && q.Type == dnsmessage.TypeA && addr.Is4() {
		_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}, dnsmessage.AResource{A: addr.As4()})
	}
	out, err := b.Finish()
	return out, err == nil
}

// ListenIn opens a TCP listener inside network namespace ns (a name under
// /var/run/netns). The socket stays in that namespace; it is served and
// closed from any goroutine.
func ListenIn(ns, network, addr string) (net.Listener, error) {
	var l net.Listener
	err := inNamespace(ns, func() (err error) {
		l, err = net.Listen(network, addr)
		return err
	})
	return l, err
}

func listenPacketIn(ns, addr string) (net.PacketConn, error) {
	var pc net.PacketConn
	err := inNamespace(ns, func() (err error) {
		pc, err = net.ListenPacket("udp", addr)
		return err
	})
	return pc, err
}

// inNamespace runs fn on a thread switched into ns, on a goroutine of its
// own: if the thread cannot be switched back it is never unlocked, so the
// runtime ends it rather than let other goroutines run in ns.
func inNamespace(ns string, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		back, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- err
			return
		}
		defer back.Close()
		target, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			runtime.UnlockOSThread()
			done <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("entering namespace %s: %w", ns, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(back.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- errors.Join(ferr, fmt.Errorf("leaving namespace %s: %w", ns, err))
			return // the thread stays locked and ends with this goroutine
		}
		runtime.UnlockOSThread()
		done <- ferr
	}()
	return <-done
}

// LAN is a web server on this machine, on every address of it (the bridge
// gateways included): the engine's machine and its LAN, as a box sees them.
// It answers "hello from the engine's machine".
func LAN(t testing.TB) (port int) {
	t.Helper()
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatalf("LAN server: %v", err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "hello from the engine's machine")
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return l.Addr().(*net.TCPAddr).Port
}

func execOutput(args ...string) (string, error) {
	out, err := exec.Command(args[0], args[1:]...).Output()
	return string(out), err
}

// MachineAddress gives this machine addr, an address of 198.51.100.0/24, on a
// veth pair of the test's own until the test ends: an address the engine's
// machine gains, as a box on the local engine sees it. It holds the made-up
// internet's lock meanwhile (both use that range here) and refuses to start
// where the range is routed or held already. A pair a killed earlier run
// left is removed first: under the lock, none is in use.
func MachineAddress(t testing.TB, addr string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("adding an address to this machine needs root")
	}
	a, err := netip.ParseAddr(addr)
	if err != nil || !netip.MustParsePrefix("198.51.100.0/24").Contains(a) {
		t.Fatalf("machine address %q: give one of 198.51.100.0/24, which nothing here uses", addr)
	}
	unlock, err := lockInternet()
	if err != nil {
		t.Fatalf("machine address: %v", err)
	}
	t.Cleanup(unlock)
	if links, err := net.Interfaces(); err == nil {
		for _, l := range links {
			if strings.HasPrefix(l.Name, machineLink) {
				_ = run("ip", "link", "del", l.Name)
			}
		}
	}
	for _, show := range [][]string{{"ip", "route", "show", "198.51.100.0/24"}, {"ip", "-o", "addr", "show", "to", "198.51.100.0/24"}} {
		if out, _ := execOutput(show...); strings.TrimSpace(out) != "" {
			t.Fatalf("machine address: 198.51.100.0/24 is in use here (%s)", strings.TrimSpace(out))
		}
	}
	name := fmt.Sprintf("%s%d", machineLink, os.Getpid()%10000)
	if err := run("ip", "link", "add", name, "type", "veth", "peer", "name", name+"p"); err != nil {
		t.Fatalf("machine address: %v", err)
	}
	t.Cleanup(func() {
		if err := run("ip", "link", "del", name); err != nil {
			t.Errorf("machine address: removing %s: %v", name, err)
		}
	})
	for _, s := range [][]string{{"ip", "addr", "add", addr + "/32", "dev", name}, {"ip", "link", "set", name, "up"}, {"ip", "link", "set", name + "p", "up"}} {
		if err := run(s...); err != nil {
			t.Fatalf("machine address: %v", err)
		}
	}
}

// machineLink starts the names of MachineAddress's veth pairs.
const machineLink = "bxma"
