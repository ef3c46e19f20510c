// Package pool is the lease protocol of boxes' pools: the rules and the
// types of boxes lease, renew, release and leases, of the reset of a
// released box and of the reaping of ended leases. It does no I/O: the
// steps that observe engines, make and remove marks, delete boxes and
// store tokens are package workspace's (workspace/pool_lease.go: lease,
// renew, release, leases; pool_reset.go: reset and reap; pool_guard.go:
// apply's claims and the confinement of commands to a lease), each
// calling these rules. It links no engine SDK.
//
// # Marks
//
// A pool box's lease lives on the box's engine, as lease marks
// (engine.LeaseMark): objects of their own names (on Docker, containers
// never started, on no network) of which the engine holds at most one of
// a name (engine.Engine.CreateLeaseMark refuses a name taken with
// engine.ErrLeaseTaken). A box has at most one claim and one reset, each
// under the one name compose.LeaseName gives it; its renewals have names
// of their own. The marks of a box, as observed, are its engine.Lease.
//
//   - The claim (ClaimMark) is the lease: its holder, its ID (NewLeaseID)
//     and its first expiry.
//   - A renewal (RenewMark) carries a later expiry for the same lease ID;
//     the lease ends at the latest expiry of its claim and renewals.
//   - The reset (ResetMark) is made first and removed last by whoever
//     deletes a released or ended lease's box; it names its process
//     (ThisProcess, PID@MACHINE) and when it began. While it is there no
//     other reset starts, and no lease chooses the box.
//   - An apply's claim (ApplyMark) is a claim with a process: an apply
//     holds it on each free pool box it deletes or recreates, for the
//     length of the apply, so that no lease takes the box under it.
//
// A box with any mark is held (engine.Lease.Held): it is not free to
// claim, and no plan deletes or recreates it (reconcile keeps a pool's
// held boxes out of its free ones, and makes no box under a name a mark
// still holds); boxes rm refuses it.
//
// # What is atomic, and why
//
// One thing only: the making of a mark by name on one engine. A claim is
// the one call that makes the box's claim mark, so of any number of
// processes, on any machines, that reach the engine, one alone gets a
// box; no lock file is needed, and none would reach another machine.
// Likewise one reset alone runs on a box. Everything else is observed and
// then acted on, and so is checked again where a race matters: a reset,
// once its mark is made, observes the box again and leaves it if its
// claim changed (ClaimID), and a claim whose box turns out gone (reset
// since it was observed) is given up.
//
// # The steps
//
// Lease: the pool's ready, unheld boxes are chosen from what was observed
// (FreeBoxes), lowest numbers first, and the claim made on the first that
// takes it; a box whose claim another made first is counted as leased and
// the next one tried. When every box tried was lost, the engine is
// observed again (it refuses a name before it lists the object) and the
// choice made anew. The box's token is then read from its executor
// container, the engine's copy, and stored in .boxes/secrets; a box whose
// token cannot be read has its claim given up. With no box free, the
// pool's reapable leases are reset once, and the lease waits for a box,
// or fails with a NoFreeBoxError.
//
// Renew: a renewal mark is made, for a lease that is neither expired,
// nor being reset, nor another's (CheckRenew). An expired lease is not
// renewed: its box is the reaper's.
//
// Release: the box is reset (CheckRelease). The reset makes its mark (or
// takes over a stale one, ResetStale; a live one is a ResetBusyError),
// observes the box again, deletes it through the one applier with its data,
// its snapshots and its stored token, removes every mark of the box, its
// own last, and makes the pool's missing boxes again as apply would, when
// apply's lock can be had (else the next apply makes them).
//
// Reap: a lease is reapable (Reapable) once it has expired (after a grace
// of ReapGrace, so that a renew refused at the expiry cannot meet the
// reset), when its reset was cut short, when an apply that claimed the box
// is gone, or when renewals are left with no claim (a renew that raced a
// reset). Reaping is a reset. It runs on boxes leases --reap, as apply's
// last step (of a plan not limited by --target), and, for its pool alone,
// in a lease that finds no free box.
//
// Others read a lease too: exec, logs and doctor under --lease ID work in
// a box only while that lease holds it (CheckInLease), and boxes mcp
// releases the boxes its session still holds when the session ends.
//
// # A kill at each step
//
//   - Before a claim's mark is made: nothing was done.
//   - After it, before the holder is told: the box is leased to a holder
//     who does not know it; the lease expires at its TTL and is reaped.
//   - During a renew: the renewal was made or not; the lease ends at one
//     expiry or the other, and nothing is left to finish.
//   - During a reset, once its mark is made: the box shows as resetting,
//     and every later step of the reset is one a second reset repeats
//     safely (it deletes what is left). The next reap, or a release of
//     the box, finishes it: on the same machine as soon as the process is
//     gone, from another machine once the reset began more than
//     StaleReset ago. Its mark is removed last, so the box is never seen
//     free while its old self is left.
//   - During the pool's making again: the box is absent; the next apply,
//     or the next reset's making again, makes it.
//   - During an apply that holds claims: each claim names its process; the
//     reap resets the box once that process is gone from this machine, or
//     once the claim's long expiry (MaxTTL) has passed.
package pool
