package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/mcpserver"
	"github.com/hermes-box/boxes/pool"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
)

// poolBoxes are the names a test pool's boxes can take: removed, with their
// lease markers, before and after the test.
func poolBoxes(pool string) []string {
	var out []string
	for n := 1; n <= 40; n++ {
		out = append(out, spec.PoolBoxName(pool, n))
	}
	return out
}

// removePool removes the boxes of pool and the lease markers of its boxes,
// each by the ID the engine lists.
func removePool(pool string) {
	names := poolBoxes(pool)
	removeBoxes(names...)
	for _, b := range names {
		ids, _ := exec.Command("docker", "ps", "-aq", "--filter", "label="+compose.LeaseBoxLabel+"="+b).Output()
		for _, id := range strings.Fields(string(ids)) {
			_ = exec.Command("docker", "rm", "-f", id).Run()
		}
	}
}

// poolDirs are n working directories of one fleet, each with its own
// .boxes and a boxes.yaml declaring pool with size free boxes, locked to
// image.
func poolDirs(t *testing.T, image, pool string, size, n int) []string {
	t.Helper()
	config := fmt.Sprintf("version: 1\nfleet: it\npools:\n  %s: {size: %d}\n", pool, size)
	var dirs []string
	for range n {
		d := t.TempDir()
		writeFile(t, filepath.Join(d, "boxes.yaml"), config)
		if r := boxes(t, d, "lock", "image", image); r.code != 0 {
			t.Fatalf("lock: %+v", r)
		}
		dirs = append(dirs, d)
	}
	return dirs
}

// leaseRows are boxes leases --json in dir.
func leaseRowsIn(t *testing.T, dir string) []pool.LeaseRow {
	t.Helper()
	r := boxes(t, dir, "leases", "--json")
	if r.code != 0 {
		t.Fatalf("leases: %+v", r)
	}
	var rows []pool.LeaseRow
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("leases --json: %v\n%s", err, r.stdout)
	}
	return rows
}

// statusWith is the HTTP status box's executor at url answers a request
// bearing token.
func statusWith(t *testing.T, url, token string) int {
	t.Helper()
	req, err := http.NewRequest("GET", url+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// leaseMarks are the names of the lease markers of the engine's boxes of pool.
func leaseMarks(t *testing.T, pool string) []string {
	t.Helper()
	out := dockerOut(t, "ps", "-a", "--filter", "label="+compose.LeaseLabel, "--format", "{{.Names}}")
	var marks []string
	for _, name := range strings.Fields(out) {
		if strings.HasPrefix(name, compose.ProjectName(pool+"-")) {
			marks = append(marks, name)
		}
	}
	sort.Strings(marks)
	return marks
}

// A pool on the real engine: eight processes claiming its three free boxes
// at once get three distinct boxes and five clear refusals; a second
// working directory, with its own .boxes, sees the same leases and leases
// from the same engine; release resets a box (the old token gets 401, the
// holder's file is gone); an expired lease is reaped. Real engine: the
// claim is the engine's refusal of a second container of one name, which
// only a real engine decides between processes, and a reset deletes and
// makes real containers and volumes.
func TestIntegrationPoolLeases(t *testing.T) {
	image, _ := startIntegration(t)
	const poolName = "it-pool"
	removePool(poolName)
	t.Cleanup(func() { removePool(poolName) })
	bin := buildBoxes(t)
	dirs := poolDirs(t, image, poolName, 3, 2)
	dir, dir2 := dirs[0], dirs[1]
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}

	// Eight claims at once.
	type result struct {
		code   int
		row    pool.LeaseRow
		stderr string
	}
	results := make([]result, 8)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(bin, "-f", filepath.Join(dir, "boxes.yaml"), "lease", poolName, "--holder", fmt.Sprintf("h%d", i), "--json")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			results[i].stderr = errb.String()
			if err != nil {
				results[i].code = cmd.ProcessState.ExitCode()
				return
			}
			if err := json.Unmarshal(out.Bytes(), &results[i].row); err != nil {
				results[i].code = -1
				results[i].stderr += "\nstdout: " + out.String()
			}
		}()
	}
	wg.Wait()
	won := map[string]string{}
	for i, r := range results {
		switch {
		case r.code == 0:
			if other, dup := won[r.row.Box]; dup {
				t.Errorf("%s was leased twice: to %s and to %s", r.row.Box, other, r.row.Holder)
			}
			won[r.row.Box] = r.row.Holder
			if r.row.Holder != fmt.Sprintf("h%d", i) || r.row.Pool != poolName || r.row.State != "leased" || r.row.Executor == "" {
				t.Errorf("lease %d: %+v", i, r.row)
			}
			if exp, err := time.Parse(time.RFC3339, r.row.Expires); err != nil || time.Until(exp) < 25*time.Minute {
				t.Errorf("lease %d expires %q, want RFC 3339 about 30 minutes from now", i, r.row.Expires)
			}
		case r.code == 1 && strings.Contains(r.stderr, "pool "+poolName+" has no free box ready"):
			// Counted from what the engine holds once the claims failed:
			// the three just leased by others, not the boxes as first seen.
			if want := "pool " + poolName + " has no free box ready: 3 leased, 0 not running, 3 not made yet (it keeps 3 free)"; !strings.Contains(r.stderr, want) {
				t.Errorf("lease %d failed with %q, want %q", i, r.stderr, want)
			}
		default:
			t.Errorf("lease %d: exit %d: %s", i, r.code, r.stderr)
		}
	}
	if len(won) != 3 {
		t.Fatalf("%d boxes leased by 8 claims of 3 free boxes, want 3: %v", len(won), won)
	}
	if marks := leaseMarks(t, poolName); len(marks) != 3 {
		t.Errorf("lease markers %v, want the three claims", marks)
	}

	// The other working directory sees the leases, tops the pool up, and
	// leases from it with its own .boxes.
	seen := 0
	for _, row := range leaseRowsIn(t, dir2) {
		switch {
		case won[row.Box] != "":
			seen++
			if row.State != "leased" || won[row.Box] != row.Holder {
				t.Errorf("from the second directory: %+v, want leased to %q", row, won[row.Box])
			}
		case row.State != "absent":
			t.Errorf("from the second directory: %+v, want the pool's other boxes absent (all leased, none made since)", row)
		}
	}
	if seen != 3 {
		t.Errorf("the second directory sees %d of the 3 leases", seen)
	}
	if r := boxes(t, dir2, "apply", "--auto-approve"); r.code != 0 || !strings.Contains(r.stdout, "pool "+poolName+": 3 to create, 3 free wanted, 0 free, 3 leased") {
		t.Fatalf("apply from the second directory: %+v", r)
	}
	r := boxes(t, dir2, "lease", poolName, "--holder", "second", "--json")
	if r.code != 0 {
		t.Fatalf("lease from the second directory: %+v", r)
	}
	var second pool.LeaseRow
	if err := json.Unmarshal([]byte(r.stdout), &second); err != nil || won[second.Box] != "" || statusWith(t, second.Executor, mustToken(t, dir2, second.Box)) != http.StatusOK {
		t.Fatalf("second directory's lease: %+v %v", second, err)
	}

	// Release: the holder's file and token are gone with the box.
	var leased string
	for box := range won {
		leased = box
		break
	}
	oldToken := mustToken(t, dir, leased)
	if r := boxes(t, dir, "exec", leased, "--", "sh", "-c", "echo mine > /data/home/agent/holders-file"); r.code != 0 {
		t.Fatalf("exec: %+v", r)
	}
	if r := boxes(t, dir, "release", leased); r.code != 0 || r.stdout != "released "+leased+": it is reset\n" {
		t.Fatalf("release: %+v", r)
	}
	var after pool.LeaseRow
	for _, row := range leaseRowsIn(t, dir) {
		if row.Box == leased {
			after = row
		}
	}
	if after.State != "free" {
		t.Fatalf("%s after its release: %+v, want free", leased, after)
	}
	if r := boxes(t, dir, "exec", leased, "--", "test", "!", "-e", "/data/home/agent/holders-file"); r.code != 0 {
		t.Errorf("the holder's file is still there after the release: %+v", r)
	}
	url := executorURL(t, dir, leased)
	if got := statusWith(t, url, oldToken); got != http.StatusUnauthorized {
		t.Errorf("the old token gets %d from the reset box, want 401", got)
	}
	if got := statusWith(t, url, mustToken(t, dir, leased)); got != http.StatusOK {
		t.Errorf("the new token gets %d, want 200", got)
	}

	// An expired lease: not renewed, and reaped.
	var expired string
	for box, holder := range won {
		if box != leased {
			expired = box
			dockerOut(t, "rm", "-f", compose.LeaseName(box, "claim", 0))
			agentImage := dockerOut(t, "inspect", "-f", "{{.Image}}", compose.ContainerName(box, compose.AgentService))
			dockerOut(t, "create", "--name", compose.LeaseName(box, "claim", 0), "--network", "none",
				"--label", compose.LeaseLabel+"=claim", "--label", compose.LeaseBoxLabel+"="+box, "--label", compose.FleetLabel+"="+fleetName("it"),
				"--label", compose.PoolLabel+"="+poolName, "--label", compose.LeaseHolderLabel+"="+holder, "--label", compose.LeaseIDLabel+"=old",
				"--label", compose.LeaseExpiresLabel+"="+time.Now().Add(-time.Minute).UTC().Format(time.RFC3339), agentImage, "true")
			break
		}
	}
	before := dockerOut(t, "inspect", "-f", "{{.Id}}", compose.ContainerName(expired, compose.AgentService))
	if r := boxes(t, dir, "renew", expired); r.code != 1 || !strings.Contains(r.stderr, "an expired lease is not renewed") {
		t.Errorf("renew of an expired lease: %+v", r)
	}
	if r := boxes(t, dir, "leases", "--reap"); r.code != 0 || !strings.Contains(r.stderr, "the lease of "+expired) {
		t.Fatalf("leases --reap: %+v", r)
	}
	// Reset: deleted, and made again only if the pool lacks free boxes.
	if out, err := exec.Command("docker", "inspect", before).CombinedOutput(); err == nil {
		t.Errorf("%s's agent container %.12s is left after the reap:\n%.200s", expired, before, out)
	}
	for _, m := range leaseMarks(t, poolName) {
		if strings.HasPrefix(m, compose.ProjectName(expired)+".") {
			t.Errorf("marker %s is left after the reap", m)
		}
	}
}

// executorURL is box's executor URL as boxes ls --json shows it in dir.
func executorURL(t *testing.T, dir, box string) string {
	t.Helper()
	r := boxes(t, dir, "ls", "--json")
	var rows []struct {
		Name string `json:"name"`
		URL  string `json:"executor_url"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("ls --json: %v\n%s", err, r.stdout)
	}
	for _, row := range rows {
		if row.Name == box && row.URL != "" {
			return row.URL
		}
	}
	t.Fatalf("no executor URL for %s in %s", box, r.stdout)
	return ""
}

// Kills in the middle of lease, renew and release converge: after each, the next
// leases --reap leaves every box of the pool leased to one holder or free
// and running, with no reset left and no marker of a box that is gone.
// Real engine: what a SIGKILL leaves half-made on it. BOXES_KILL_TRIALS
// sets how many kills of each (make test-long runs more).
func TestIntegrationPoolKills(t *testing.T) {
	image, _ := startIntegration(t)
	const poolName = "it-kpool"
	removePool(poolName)
	t.Cleanup(func() { removePool(poolName) })
	bin := buildBoxes(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), fmt.Sprintf("version: 1\nfleet: it\npools:\n  %s: {size: 2}\n", poolName))
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	trials := trialsFrom(t, "BOXES_KILL_TRIALS", 2)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 20))
	killed := func(after time.Duration, args ...string) {
		cmd := exec.Command(bin, append([]string{"-f", filepath.Join(dir, "boxes.yaml")}, args...)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(after):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-done
		}
	}
	for i := range trials {
		// A claim killed at some point.
		killed(time.Duration(rng.IntN(120))*time.Millisecond, "lease", poolName, "--holder", fmt.Sprintf("k%d", i))
		converged(t, dir, poolName)
		// A release killed at some point of its reset, of a box leased now.
		if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
			t.Fatalf("apply: %+v", r)
		}
		r := boxes(t, dir, "lease", poolName, "--holder", "victim", "--json")
		var row pool.LeaseRow
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &row) != nil {
			t.Fatalf("lease: %+v", r)
		}
		// A renew killed at some point: the lease stands, renewed or not.
		killed(time.Duration(rng.IntN(120))*time.Millisecond, "renew", row.Box, "--ttl", "1h")
		converged(t, dir, poolName)
		if after := leaseRowOf(t, dir, row.Box); after.State != "leased" || after.Holder != "victim" {
			t.Errorf("after a renew killed: %+v, want leased to victim", after)
		}
		killed(time.Duration(200+rng.IntN(2500))*time.Millisecond, "release", row.Box)
		converged(t, dir, poolName)
		if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
			t.Fatalf("apply after trial %d: %+v", i, r)
		}
		for _, row := range leaseRowsIn(t, dir) {
			if row.State != "free" && row.State != "leased" {
				t.Errorf("after trial %d and an apply, %s is %s", i, row.Box, row.State)
			}
			// What the trial left leased (a claim that won before its
			// kill, a release killed before it began) is released, so
			// that the pool does not grow with the trials: each box holds
			// networks of the engine's few address pools.
			if row.State == "leased" {
				if r := boxes(t, dir, "release", row.Box); r.code != 0 {
					t.Errorf("release of %s after trial %d: %+v", row.Box, i, r)
				}
			}
		}
	}
}

// converged runs leases --reap and checks that each box of pool is leased
// to one holder, or free and running; no reset is left, and no marker is
// left of a box that is gone.
func converged(t *testing.T, dir, pool string) {
	t.Helper()
	if r := boxes(t, dir, "leases", "--reap"); r.code != 0 {
		t.Fatalf("leases --reap: %+v", r)
	}
	rows := leaseRowsIn(t, dir)
	have := map[string]bool{}
	for _, row := range rows {
		have[row.Box] = true
		switch row.State {
		case "leased":
			if row.Holder == "" {
				t.Errorf("%s is leased to no one", row.Box)
			}
		case "free", "absent":
		case "not running":
			// A box the reset's top-up was making when killed: free,
			// made anew (no holder's data), and finished by apply.
		default:
			t.Errorf("%s is %s after the reap", row.Box, row.State)
		}
	}
	for _, m := range leaseMarks(t, pool) {
		box, _, _ := strings.Cut(strings.TrimPrefix(m, compose.ProjectPrefix), ".")
		if strings.Contains(m, ".lease-reset") {
			t.Errorf("reset marker %s is left after the reap", m)
		}
		if !have[box] {
			t.Errorf("marker %s is left of a box the pool does not have", m)
		}
	}
}

// An MCP session of boxes mcp --allow lease, over its real standard input
// and output: it leases a pool box, runs a command in it, writes and reads
// a file, cannot touch the pool's other box; once its input closes, the
// box it held is reset and free. Real engine: the file and the command
// are in the box's real /data, and the reset makes the box anew.
func TestIntegrationMCPLease(t *testing.T) {
	image, _ := startIntegration(t)
	const pool = "it-mpool"
	removePool(pool)
	t.Cleanup(func() { removePool(pool) })
	bin := buildBoxes(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "boxes.yaml")
	writeFile(t, config, fmt.Sprintf("version: 1\nfleet: it\npools:\n  %s: {size: 2}\n", pool))
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	ctx := context.Background()
	server := exec.Command(bin, "-f", config, "mcp", "--allow", "lease")
	var serverErr bytes.Buffer
	server.Stderr = &serverErr
	// The SDK's client signals a server that has not exited 5 s after its
	// input closed; a release takes about 2 s, longer on a busy machine.
	transport := &mcp.CommandTransport{Command: server, TerminateDuration: 2 * time.Minute}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	call := mcpCaller(t, cs)
	res, out := call("lease", map[string]any{"pool": pool, "holder": "mcp-test", "ttl": "10m"})
	var l mcpserver.Lease
	if res.IsError || json.Unmarshal([]byte(out), &l) != nil || l.Box != spec.PoolBoxName(pool, 1) || l.Holder != "mcp-test" {
		t.Fatalf("lease: %v %s", res.IsError, out)
	}
	other := spec.PoolBoxName(pool, 2)
	before := dockerOut(t, "inspect", "-f", "{{.Id}}", compose.ContainerName(l.Box, compose.AgentService))
	if res, out := call("write_file", map[string]any{"box": l.Box, "path": "work/it's here.txt", "content": "from the session\n"}); res.IsError {
		t.Fatalf("write_file: %s", out)
	}
	if res, out := call("read_file", map[string]any{"box": l.Box, "path": "work/it's here.txt"}); res.IsError || out != "from the session\n" {
		t.Errorf("read_file: %v %q", res.IsError, out)
	}
	res, out = call("exec", map[string]any{"box": l.Box, "command": []string{"sh", "-c", "cat work/*.txt; id -un"}})
	var r mcpserver.Result
	if res.IsError || json.Unmarshal([]byte(out), &r) != nil || r.ExitCode != 0 || r.Stdout != "from the session\nagent\n" {
		t.Errorf("exec: %v %s", res.IsError, out)
	}
	if res, out := call("exec", map[string]any{"box": l.Box, "command": []string{"sleep", "30"}, "timeout_seconds": 1}); res.IsError || !strings.Contains(out, `"exit_code":124`) {
		t.Errorf("exec past its time: %v %s", res.IsError, out)
	}
	if res, out := call("exec", map[string]any{"box": other, "command": []string{"true"}}); !res.IsError || !strings.Contains(out, "does not hold") {
		t.Errorf("exec in the pool's other box: %v %s", res.IsError, out)
	}

	// A symbolic link does not lead the file tools out of the home: the
	// path is resolved in the box, and what is opened is checked.
	links := "ln -s /etc etclink && ln -s /tmp tmplink && ln -s /tmp/it-outside flink && mkdir d && ln -s .. d/up && ln -s \"work/it's here.txt\" inlink"
	if res, out := call("exec", map[string]any{"box": l.Box, "command": []string{"sh", "-c", links}}); res.IsError || !strings.Contains(out, `"exit_code":0`) {
		t.Fatalf("making links: %s", out)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"read_file", map[string]any{"path": "etclink/hostname"}},
		{"read_file", map[string]any{"path": "d/up/etclink/hostname"}},
		{"write_file", map[string]any{"path": "tmplink/it-written", "content": "x"}},
		{"write_file", map[string]any{"path": "tmplink/it-dir/it-written", "content": "x"}},
		{"write_file", map[string]any{"path": "flink", "content": "x"}},
	} {
		c.args["box"] = l.Box
		if res, out := call(c.tool, c.args); !res.IsError || !strings.Contains(out, "leaves /data/home/agent through a symbolic link") {
			t.Errorf("%s %s: %v %q", c.tool, c.args["path"], res.IsError, out)
		}
	}
	if res, out := call("exec", map[string]any{"box": l.Box, "command": []string{"sh", "-c", "ls -A /tmp | grep it- ; true"}}); res.IsError || !strings.Contains(out, `"stdout":""`) {
		t.Errorf("written outside the home: %s", out)
	}
	if res, out := call("read_file", map[string]any{"box": l.Box, "path": "d/up/inlink"}); res.IsError || out != "from the session\n" {
		t.Errorf("read_file through links inside the home: %v %q", res.IsError, out)
	}

	// The pool leaves boxes.yaml: its leased box is still the session's
	// alone. A read-only session of the same directory cannot exec in it.
	writeFile(t, config, "version: 1\nfleet: it\n")
	st, ct := mcp.NewInMemoryTransports()
	if _, err := mcpserver.New(inProcess(DefaultConnectors()), config, "test").Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	ros, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ros.Close()
	if res, out := mcpCaller(t, ros)("exec", map[string]any{"box": l.Box, "command": []string{"cat", "work/it's here.txt"}}); !res.IsError || !strings.Contains(out, "reached only under its lease") {
		t.Errorf("a read-only session's exec in the leased box of a pool boxes.yaml no longer has: %v %s", res.IsError, out)
	}
	if res, out := call("exec", map[string]any{"box": l.Box, "command": []string{"true"}}); res.IsError || !strings.Contains(out, `"exit_code":0`) {
		t.Errorf("the holder's exec once the pool left boxes.yaml: %s", out)
	}
	writeFile(t, config, fmt.Sprintf("version: 1\nfleet: it\npools:\n  %s: {size: 2}\n", pool))
	if row := leaseRowOf(t, dir, l.Box); row.State != "leased" || row.Holder != "mcp-test" {
		t.Fatalf("while the session holds it: %+v", row)
	}

	// The session ends: its input closes.
	if err := cs.Close(); err != nil {
		t.Logf("closing the session: %v", err)
	}
	if row := leaseRowOf(t, dir, l.Box); row.State != "free" {
		t.Fatalf("after the session: %+v\n%s", row, serverErr.String())
	}
	if now := dockerOut(t, "inspect", "-f", "{{.Id}}", compose.ContainerName(l.Box, compose.AgentService)); now == before {
		t.Errorf("%s was not reset when the session ended", l.Box)
	}
	if r := boxes(t, dir, "exec", l.Box, "--", "test", "!", "-e", "work/it's here.txt"); r.code != 0 {
		t.Errorf("the session's file is left after the reset: %+v", r)
	}
}

// leaseRowOf is box's row of boxes leases --json in dir.
func leaseRowOf(t *testing.T, dir, box string) pool.LeaseRow {
	t.Helper()
	for _, row := range leaseRowsIn(t, dir) {
		if row.Box == box {
			return row
		}
	}
	t.Fatalf("no row of %s in boxes leases", box)
	return pool.LeaseRow{}
}

// A pool box reset from another working directory is made again with a
// token nobody kept: d2 leases the box (its token file holds the token);
// d1 releases it while d1's apply lock is held, so its top-up cannot make
// the box again; d2's next apply makes it, and the previous holder's token
// gets 401 from the new executor, the token d2 now stores 200. Real engine:
// the token the executor answers to is the one its container was made with.
func TestIntegrationPoolResetTokenNotKept(t *testing.T) {
	image, _ := startIntegration(t)
	const poolName = "it-tkpool"
	removePool(poolName)
	t.Cleanup(func() { removePool(poolName) })
	dirs := poolDirs(t, image, poolName, 1, 2)
	d1, d2 := dirs[0], dirs[1]
	if r := boxes(t, d1, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	r := boxes(t, d2, "lease", poolName, "--holder", "previous", "--json")
	var row pool.LeaseRow
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &row) != nil {
		t.Fatalf("lease in the second directory: %+v", r)
	}
	old := mustToken(t, d2, row.Box)
	if got := statusWith(t, row.Executor, old); got != http.StatusOK {
		t.Fatalf("the holder's token gets %d from its box, want 200", got)
	}

	lock, err := statedir.LockApply(filepath.Join(d1, "boxes.yaml"), "a test holding the apply lock")
	if err != nil {
		t.Fatal(err)
	}
	r = boxes(t, d1, "release", row.Box)
	if err := lock.Unlock(); err != nil {
		t.Fatal(err)
	}
	if r.code != 0 {
		t.Fatalf("release from the first directory: %+v", r)
	}
	if out := dockerOut(t, "ps", "-aq", "--filter", "label="+compose.BoxLabel+"="+row.Box); strings.TrimSpace(out) != "" {
		t.Fatalf("the release made %s again though its apply lock was held (the case this test needs): %s", row.Box, out)
	}

	if r := boxes(t, d2, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply in the second directory: %+v", r)
	}
	url := executorURL(t, d2, row.Box)
	if got := statusWith(t, url, old); got != http.StatusUnauthorized {
		t.Errorf("the previous holder's token gets %d from the box made again, want 401", got)
	}
	now := mustToken(t, d2, row.Box)
	if now == old {
		t.Errorf("the second directory's token file still holds the previous holder's token")
	}
	if got := statusWith(t, url, now); got != http.StatusOK {
		t.Errorf("the token the second directory stores gets %d, want 200", got)
	}
}
