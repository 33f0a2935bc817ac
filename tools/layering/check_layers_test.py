#!/usr/bin/python3
"""Tests of check_layers.py: the real tree passes, and each kind of planted violation fails,
naming the file and the layers. The tree is copied (code, scripts, BUILD files, the docs, the
layer order) into a temporary folder first, so a planted file never touches the checkout."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import check_layers  # noqa: E402


class CheckLayersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.copy = tempfile.mkdtemp(prefix="layering-")
        for path in check_layers.tracked_files(ROOT):
            if (path.endswith(check_layers.CODE_EXTENSIONS + (".py", ".sh")) or
                    os.path.basename(path) in ("BUILD", "Makefile", "layers.txt") or path in check_layers.DOCS):
                os.makedirs(os.path.join(cls.copy, os.path.dirname(path)), exist_ok=True)
                shutil.copy(os.path.join(ROOT, path), os.path.join(cls.copy, path))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.copy)

    def setUp(self):
        self.tree = tempfile.mkdtemp(prefix="tree-")
        shutil.rmtree(self.tree)
        shutil.copytree(self.copy, self.tree)

    def tearDown(self):
        shutil.rmtree(self.tree)

    def check(self):
        violations, _, _ = check_layers.check(self.tree, os.path.join(self.tree, "tools/layering/layers.txt"))
        return violations

    def append(self, path, text):
        with open(os.path.join(self.tree, path), "a") as f:
            f.write(text)

    def write(self, path, text):
        os.makedirs(os.path.dirname(os.path.join(self.tree, path)), exist_ok=True)
        with open(os.path.join(self.tree, path), "w") as f:
            f.write(text)

    def test_the_tree_as_it_is_passes(self):
        self.assertEqual(self.check(), [])

    def test_an_include_of_a_higher_layer_fails(self):
        # What core/compiler once did: the compiler calling the ONNX frontend.
        self.append("core/compiler/compiler.cc", '#include "frontends/onnx/importer.h"\n')
        violations = self.check()
        self.assertEqual(len(violations), 1, violations)
        self.assertIn("core/compiler/compiler.cc:", violations[0])
        self.assertIn("frontends/onnx/importer.h", violations[0])
        self.assertIn("layer core/compiler may not use the higher layer frontends/onnx", violations[0])

    def test_an_include_through_an_include_root_is_resolved(self):
        # A higher layer's header published through Bazel's `includes` (as agate/runtime.h is):
        # included by its short name from a lower layer, it is still found and refused.
        self.write("tools/cli/pub/cli_api.h", "int f();\n")
        self.append("tools/cli/BUILD", 'cc_library(name = "pub", hdrs = ["pub/cli_api.h"], includes = ["pub"])\n')
        self.append("core/ir/dtype.cc", '#include "cli_api.h"\n')
        violations = self.check()
        self.assertEqual(len(violations), 1, violations)
        self.assertIn("includes tools/cli/pub/cli_api.h", violations[0])

    def test_a_bazel_dependency_on_a_higher_layer_fails(self):
        build = os.path.join(self.tree, "core/ir/BUILD")
        with open(build) as f:
            text = f.read()
        with open(build, "w") as f:
            f.write(text.replace('"//core/support",', '"//core/support",\n        "//core/ops",', 1))
        violations = self.check()
        self.assertTrue(any(v.startswith("core/ir/BUILD:") and "//core/ops" in v and
                            "may not use the higher layer core/ops" in v for v in violations), violations)

    def test_production_code_using_test_code_fails(self):
        self.append("core/lower/lower.cc", '#include "runtime_minimal/testing/test_modules.h"\n')
        violations = self.check()
        self.assertEqual(len(violations), 1, violations)
        self.assertIn("production code includes test code runtime_minimal/testing/test_modules.h", violations[0])

    def test_tests_may_use_higher_layers(self):
        self.write("core/ir/planted_test.cc", '#include "core/compiler/compiler.h"\n')
        self.assertEqual(self.check(), [])

    def test_a_folder_in_no_layer_fails(self):
        self.write("newlayer/thing.cc", "int x;\n")
        violations = self.check()
        self.assertEqual(violations, ["newlayer/thing.cc: its folder is in no layer of tools/layering/layers.txt"])

    def test_docs_that_miss_a_layer_or_name_a_missing_folder_fail(self):
        readme = os.path.join(self.tree, "README.md")
        with open(readme) as f:
            text = f.read()
        text = text.replace("`core/graph_eval`", "`core/reference`")
        with open(readme, "w") as f:
            f.write(text)
        violations = self.check()
        self.assertIn("README.md: names no layer `core/graph_eval` (tools/layering/layers.txt)", violations)
        self.assertTrue(any("names `core/reference`, which is no folder of the tree" in v for v in violations),
                        violations)

    def test_the_command_line_exits_non_zero_on_a_violation(self):
        self.append("core/support/error.cc", '#include "core/graph/graph.h"\n')
        run = subprocess.run([sys.executable, os.path.join(HERE, "check_layers.py"), "--root", self.tree],
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 1, run.stdout)
        self.assertIn("core/support/error.cc:", run.stdout)
        self.assertIn("1 layering violations", run.stdout)


if __name__ == "__main__":
    unittest.main()
