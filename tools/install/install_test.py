#!/usr/bin/python3
"""Tests of install.py on hand-made tarballs: the layout and pkg-config file, an upgrade over an
earlier install, and that every refused or failed install leaves the prefix exactly as it was."""
import io
import os
import sys
import tarfile
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import install  # noqa: E402

HEADER = b"#define AGATE_RUNTIME_ABI_VERSION_MAJOR 1\n#define AGATE_RUNTIME_ABI_VERSION_MINOR 3\n"


def make_tarball(path, extra=()):
    with tarfile.open(path, "w:gz") as archive:
        def add_file(name, data):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))

        def add_link(name, target):
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            archive.addfile(info)

        add_file("include/agate/runtime.h", HEADER)
        add_file("include/agate/status.h", b"new status\n")
        add_file("lib/libagate_runtime.so.1.3", b"new library\n")
        add_link("lib/libagate_runtime.so.1", "libagate_runtime.so.1.3")
        add_link("lib/libagate_runtime.so", "libagate_runtime.so.1")
        add_file("lib/libagate_runtime.a", b"new archive\n")
        for kind, name, value in extra:
            add_file(name, value) if kind == "file" else add_link(name, value)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def snapshot(root):
    """Every path under root with its content (or link target), for before/after comparisons."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                out[rel] = "-> " + os.readlink(path)
            elif os.path.isdir(path):
                out[rel] = "dir"
            else:
                out[rel] = read(path)
    return out


class InstallTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.tarball = os.path.join(self.tmp.name, "agate-runtime.tar.gz")
        make_tarball(self.tarball)
        self.prefix = os.path.join(self.tmp.name, "prefix")

    def tearDown(self):
        self.tmp.cleanup()

    def test_lays_out_headers_libraries_links_and_pkg_config(self):
        install.install(self.prefix, self.tarball)
        lib = os.path.join(self.prefix, "lib")
        self.assertEqual(os.readlink(os.path.join(lib, "libagate_runtime.so")), "libagate_runtime.so.1")
        self.assertEqual(read(os.path.join(lib, "libagate_runtime.so")), b"new library\n")
        pc = read(os.path.join(lib, "pkgconfig", "agate-runtime.pc")).decode()
        self.assertIn(f"prefix={self.prefix}\n", pc)
        self.assertIn("Version: 1.3\n", pc)
        self.assertIn("Libs.private: -lsodium", pc)
        self.assertEqual([n for n in os.listdir(self.prefix) if n.startswith(".agate-install")], [])

    def test_upgrade_replaces_the_earlier_install_and_keeps_other_files(self):
        os.makedirs(os.path.join(self.prefix, "include", "agate"))
        with open(os.path.join(self.prefix, "include", "agate", "status.h"), "w") as f:
            f.write("old status\n")
        with open(os.path.join(self.prefix, "include", "other.h"), "w") as f:
            f.write("someone else's\n")
        install.install(self.prefix, self.tarball)
        self.assertEqual(read(os.path.join(self.prefix, "include", "agate", "status.h")), b"new status\n")
        self.assertEqual(read(os.path.join(self.prefix, "include", "other.h")), b"someone else's\n")

    def assert_refused_and_untouched(self, message, tarball=None):
        before = snapshot(self.prefix)
        with self.assertRaises(install.InstallError) as raised:
            install.install(self.prefix, tarball or self.tarball)
        self.assertIn(message, str(raised.exception))
        self.assertEqual(snapshot(self.prefix), before)

    def test_a_file_where_a_folder_goes_is_refused_before_anything_changes(self):
        os.makedirs(os.path.join(self.prefix, "lib"))
        with open(os.path.join(self.prefix, "lib", "pkgconfig"), "w") as f:
            f.write("a file\n")
        self.assert_refused_and_untouched("is not a directory")

    def test_a_folder_where_a_file_goes_is_refused(self):
        os.makedirs(os.path.join(self.prefix, "lib", "libagate_runtime.a"))
        self.assert_refused_and_untouched("is a directory")

    def test_a_failure_half_way_restores_the_prefix(self):
        os.makedirs(os.path.join(self.prefix, "include", "agate"))
        with open(os.path.join(self.prefix, "include", "agate", "status.h"), "w") as f:
            f.write("old status\n")
        real_rename = os.rename
        calls = []

        def failing_rename(src, dst):
            # Moves into the prefix: fail the 4th, after files were replaced and created.
            if os.sep + "stage" + os.sep in src:
                calls.append(dst)
                if len(calls) == 4:
                    raise OSError(28, "No space left on device", dst)
            return real_rename(src, dst)

        with mock.patch.object(install.os, "rename", failing_rename):
            self.assert_refused_and_untouched("No space left on device")
        self.assertEqual(len(calls), 4)

    def test_a_tarball_with_members_outside_include_and_lib_is_refused(self):
        bad = os.path.join(self.tmp.name, "bad.tar.gz")
        make_tarball(bad, [("file", "etc/passwd", b"x")])
        os.makedirs(self.prefix)
        self.assert_refused_and_untouched("unexpected member", bad)

    def test_a_link_leaving_its_folder_is_refused(self):
        bad = os.path.join(self.tmp.name, "bad.tar.gz")
        make_tarball(bad, [("link", "lib/evil.so", "../../etc/passwd")])
        os.makedirs(self.prefix)
        self.assert_refused_and_untouched("points outside", bad)

    def test_a_missing_tarball_is_named(self):
        with self.assertRaises(install.InstallError) as raised:
            install.install(self.prefix, os.path.join(self.tmp.name, "none.tar.gz"))
        self.assertIn("none.tar.gz", str(raised.exception))


if __name__ == "__main__":
    unittest.main()
