// Command initfloor is boxes' start-up floor: a program that links exactly
// the packages of other modules boxes links (imports*_linux.go, written by
// gen.go from go list -deps ./cmd/boxes) and does nothing else. What their
// initialisation costs, boxes cannot avoid while it links them;
// BenchmarkStartup (cmd/boxes/cli) compares boxes version with it.
//
// initfloor_test.go fails when the list no longer matches what boxes links:
// go generate ./internal/initfloor writes it again.
package main

//go:generate go run gen.go

func main() {}
