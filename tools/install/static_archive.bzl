"""cc_static_archive: one static library (.a) holding the objects of a cc_library and of every
agate library it depends on.

Why: Bazel writes one archive per cc_library; a user linking agate's runtime statically wants one
libagate_runtime.a. System libraries (external repositories such as @libsodium) are not copied in:
they stay link-time dependencies, listed in the pkg-config file's Libs.private.
"""

def _archives(dep):
    out = []
    for linker_input in dep[CcInfo].linking_context.linker_inputs.to_list():
        if linker_input.owner.workspace_name != "":
            continue
        for library in linker_input.libraries:
            archive = library.pic_static_library or library.static_library
            if archive != None:
                out.append(archive)
    return out

def _cc_static_archive_impl(ctx):
    archives = []
    for dep in ctx.attr.deps:
        for archive in _archives(dep):
            if archive not in archives:
                archives.append(archive)
    out = ctx.actions.declare_file(ctx.attr.out)
    script = ctx.actions.declare_file(ctx.label.name + ".mri")
    lines = ["CREATE " + out.path] + ["ADDLIB " + a.path for a in archives] + ["SAVE", "END"]
    ctx.actions.write(script, "\n".join(lines) + "\n")
    ctx.actions.run_shell(
        inputs = archives + [script],
        outputs = [out],
        command = "ar -M < {script} && ranlib {out}".format(script = script.path, out = out.path),
        mnemonic = "CcStaticArchive",
        progress_message = "Archiving %s" % out.short_path,
    )
    return [DefaultInfo(files = depset([out]))]

cc_static_archive = rule(
    implementation = _cc_static_archive_impl,
    attrs = {
        "deps": attr.label_list(providers = [CcInfo]),
        "out": attr.string(mandatory = True),
    },
)
