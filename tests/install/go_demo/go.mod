module example.com/agate_go_demo

go 1.19

require agate.dev/agate v0.0.0

// The `install` suite rewrites this to the checkout's bindings/go: agate.dev/agate is a local module.
replace agate.dev/agate => AGATE_GO_PATH
