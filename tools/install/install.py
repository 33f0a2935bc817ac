#!/usr/bin/python3
"""Installs agate's runtime tarball (//tools/install:agate_runtime_tarball) into a prefix.

Why a script and not `tar -x`: the pkg-config file must name the prefix, and an install that
fails half-way (a full disk, a read-only file, a directory where a file should go) must leave the
prefix as it was. So the whole tree is first staged inside the prefix (same file system), every
conflict is checked before anything is touched, and the staged files are then renamed into place
one by one; when a rename fails, the ones already done are undone and the files they replaced
restored.

    install.py --prefix DIR --tarball agate-runtime.tar.gz

Laid out: include/agate/*.h, lib/libagate_runtime.so.M.N with its links .so.M and .so,
lib/libagate_runtime.a, lib/pkgconfig/agate-runtime.pc. Prints the files installed.
"""
import argparse
import os
import re
import shutil
import sys
import tarfile
import tempfile

PC_TEMPLATE = """prefix={prefix}
exec_prefix=${{prefix}}
libdir=${{exec_prefix}}/lib
includedir=${{prefix}}/include

Name: agate-runtime
Description: agate's minimal runtime: loads and runs compiled agate modules (C ABI, agate/runtime.h)
URL: https://github.com/agate-dev/agate
Version: {version}
Libs: -L${{libdir}} -lagate_runtime
Libs.private: -lsodium -ldl -lpthread -lstdc++ -lm
Cflags: -I${{includedir}}
"""


class InstallError(Exception):
    pass


def abi_version(header_path):
    with open(header_path, encoding="utf-8") as header:
        text = header.read()
    major = re.search(r"#define AGATE_RUNTIME_ABI_VERSION_MAJOR (\d+)", text)
    minor = re.search(r"#define AGATE_RUNTIME_ABI_VERSION_MINOR (\d+)", text)
    if not major or not minor:
        raise InstallError(f"{header_path} has no AGATE_RUNTIME_ABI_VERSION_MAJOR/MINOR: not an agate runtime tarball")
    return f"{major.group(1)}.{minor.group(1)}"


def unpack(tarball, stage):
    """Unpacks the tarball into stage, refusing members outside include/ and lib/ or links leaving them."""
    try:
        with tarfile.open(tarball, "r:gz") as archive:
            for member in archive.getmembers():
                name = os.path.normpath(member.name)
                if name.startswith(("/", "..")) or name.split(os.sep)[0] not in ("include", "lib"):
                    raise InstallError(f"{tarball}: unexpected member '{member.name}' (only include/ and lib/)")
                if member.issym() and ("/" in member.linkname or member.linkname.startswith("..")):
                    raise InstallError(f"{tarball}: link '{member.name}' points outside its folder")
                if not (member.isfile() or member.isdir() or member.issym()):
                    raise InstallError(f"{tarball}: '{member.name}' is not a file, folder or link")
            archive.extractall(stage)
    except (OSError, tarfile.TarError) as error:
        raise InstallError(f"cannot unpack {tarball}: {error}") from error


def staged_files(stage):
    """Relative paths of every file and link under stage, sorted."""
    out = []
    for root, dirs, files in os.walk(stage):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            out.append(os.path.relpath(os.path.join(root, name), stage))
    return sorted(out)


def check_conflicts(prefix, files):
    for rel in files:
        dest = os.path.join(prefix, rel)
        if os.path.isdir(dest) and not os.path.islink(dest):
            raise InstallError(f"{dest} is a directory; the runtime would install a file there")
        parent = os.path.dirname(dest)
        while parent != prefix and parent:
            if os.path.lexists(parent) and not os.path.isdir(parent):
                raise InstallError(f"{parent} is not a directory; the runtime installs into it")
            parent = os.path.dirname(parent)


def commit(prefix, stage, backup, files):
    """Renames the staged files into place; on failure restores the prefix and re-raises."""
    done = []  # (dest, backup path or None, directories created)
    try:
        for rel in files:
            dest = os.path.join(prefix, rel)
            created = []
            parent = os.path.dirname(dest)
            missing = []
            while not os.path.isdir(parent):
                missing.append(parent)
                parent = os.path.dirname(parent)
            for folder in reversed(missing):
                os.mkdir(folder)
                created.append(folder)
            saved = None
            if os.path.lexists(dest):
                saved = os.path.join(backup, rel)
                os.makedirs(os.path.dirname(saved), exist_ok=True)
                os.rename(dest, saved)
            done.append((dest, saved, created))
            os.rename(os.path.join(stage, rel), dest)
    except OSError as error:
        for dest, saved, created in reversed(done):
            if os.path.lexists(dest):
                os.remove(dest)  # the new file (its rename succeeded)
            if saved is not None:
                os.rename(saved, dest)
            for folder in reversed(created):
                try:
                    os.rmdir(folder)
                except OSError:
                    pass
        raise InstallError(f"cannot install {error.filename}: {error.strerror}; the prefix was left as it was") from error


def install(prefix, tarball):
    prefix = os.path.abspath(prefix)
    if not os.path.isfile(tarball):
        raise InstallError(f"no tarball at {tarball} (bazel build //tools/install:agate_runtime_tarball)")
    try:
        os.makedirs(prefix, exist_ok=True)
    except OSError as error:
        raise InstallError(f"cannot create the prefix {prefix}: {error.strerror}") from error
    work = tempfile.mkdtemp(prefix=".agate-install-", dir=prefix)
    try:
        stage = os.path.join(work, "stage")
        backup = os.path.join(work, "backup")
        os.mkdir(stage)
        os.mkdir(backup)
        unpack(tarball, stage)
        version = abi_version(os.path.join(stage, "include", "agate", "runtime.h"))
        os.makedirs(os.path.join(stage, "lib", "pkgconfig"), exist_ok=True)
        with open(os.path.join(stage, "lib", "pkgconfig", "agate-runtime.pc"), "w", encoding="utf-8") as pc:
            pc.write(PC_TEMPLATE.format(prefix=prefix, version=version))
        files = staged_files(stage)
        check_conflicts(prefix, files)
        commit(prefix, stage, backup, files)
        return files
    except OSError as error:
        raise InstallError(f"cannot stage the install in {work}: {error.strerror}") from error
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", required=True, help="where to install (include/, lib/ are made under it)")
    parser.add_argument("--tarball", required=True, help="the runtime tarball (//tools/install:agate_runtime_tarball)")
    args = parser.parse_args()
    try:
        files = install(args.prefix, args.tarball)
    except InstallError as error:
        print(f"agate install: {error}", file=sys.stderr)
        return 1
    prefix = os.path.abspath(args.prefix)
    for rel in files:
        print(os.path.join(prefix, rel))
    print(f"agate install: runtime installed in {prefix}; "
          f"PKG_CONFIG_PATH={os.path.join(prefix, 'lib', 'pkgconfig')} pkg-config --libs agate-runtime", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
