package apply_test

import "github.com/hermes-box/boxes/internal/plantest"

const (
	testImage  = plantest.Image
	oldImage   = plantest.OldImage
	testToken  = plantest.Token
	testConfig = plantest.ConfigPath
	testFleet  = plantest.Fleet
	autoPort   = plantest.AutoPort
	gib        = plantest.GiB
)

// The shared fixtures, by the names these tests use.
var (
	testBox       = plantest.Box
	testCfg       = plantest.Config
	observeBox    = plantest.ObserveBox
	emptyObserved = plantest.EmptyObserved
)
