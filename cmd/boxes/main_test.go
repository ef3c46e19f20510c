package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/hermes-box/boxes/cmd/boxes/cli"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"boxes": func() { os.Exit(cli.Main(cli.StdStreams(), os.Args[1:])) },
	})
}

// TestScripts checks the command-line contract: each testdata/script/*.txtar
// runs the real boxes and compares its exact stdout and stderr. Scripts that
// need a Docker engine are not here: they are TestIntegration… tests.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(e *testscript.Env) error {
			// No engine is reached from a script: a command that tries fails fast.
			e.Setenv("DOCKER_HOST", "unix://"+e.WorkDir+"/no-docker.sock")
			e.Setenv("NO_COLOR", "1")
			return nil
		},
	})
}
