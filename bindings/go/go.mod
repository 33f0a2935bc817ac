module agate.dev/agate

go 1.19
