"""flatc_cc_library: the C++ reader/builder header of one .fbs schema, generated with Debian's flatc."""

load("@rules_cc//cc:defs.bzl", "cc_library")

def flatc_cc_library(name, src, deps = [], visibility = None):
    """Generates `<schema>_generated.h` next to the schema and wraps it in a cc_library."""
    out = src.split("/")[-1].replace(".fbs", "_generated.h")
    native.genrule(
        name = name + "_gen",
        srcs = [src],
        outs = [out],
        tools = ["@flatbuffers//:bin/flatc"],
        cmd = "$(location @flatbuffers//:bin/flatc) --cpp --scoped-enums -o $(@D) $(SRCS)",
    )
    cc_library(
        name = name,
        hdrs = [out],
        deps = deps + ["@flatbuffers"],
        visibility = visibility,
    )
