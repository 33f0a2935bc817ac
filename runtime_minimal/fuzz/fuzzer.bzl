"""One way to declare a fuzzer: its target library, the fuzzer binary and its CI smoke run.

agate_fuzzer(name = "npz", ...) defines
  :npz_fuzz_target  the LLVMFuzzerTestOneInput library (sources built with -fsanitize=fuzzer-no-link under clang);
  :npz_fuzzer       libFuzzer under clang (--config=asan/ubsan/tsan, CC=clang-14), the standalone driver
                    (standalone_fuzz_main.cc) under gcc;
  :npz_fuzz_test    the CI smoke run through fuzz_ci.sh: `runs` executions over `corpus`, with the
                    allocation cap `malloc_limit_mb` (libFuzzer's own; RLIMIT_AS in the standalone driver).
"""

load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_library")

def agate_fuzzer(name, srcs, deps, corpus, runs = 0, malloc_limit_mb = 0, size = "medium", local_defines = []):
    clang = "//runtime_minimal/fuzz:clang"
    cc_library(
        name = name + "_fuzz_target",
        testonly = True,
        srcs = srcs,
        local_defines = local_defines,
        copts = select({
            clang: ["-fsanitize=fuzzer-no-link"],
            "//conditions:default": [],
        }),
        alwayslink = True,
        deps = deps,
    )
    cc_binary(
        name = name + "_fuzzer",
        testonly = True,
        linkopts = select({
            clang: ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        deps = [":" + name + "_fuzz_target"] + select({
            clang: [],
            "//conditions:default": ["//runtime_minimal/fuzz:standalone_fuzz_main"],
        }),
    )
    flags = []
    if runs:
        flags.append("-runs=%d" % runs)
    if malloc_limit_mb:
        flags.append("-malloc_limit_mb=%d" % malloc_limit_mb)
    native.sh_test(
        name = name + "_fuzz_test",
        size = size,
        srcs = ["//runtime_minimal/fuzz:fuzz_ci.sh"],
        args = ["$(location :%s_fuzzer)" % name] + flags + ["$(locations %s)" % c for c in corpus],
        data = [":" + name + "_fuzzer"] + corpus,
    )
