#!/usr/bin/python3
"""Tests of adaptive fusion's offline training (train_fusion.py) on measured data shipped in testdata/.

testdata/measured_groups.jsonl: records of `train_fusion.py collect` (resnet18 and mobilenet_v3_small
under rule and none on this project's CI machine class, 1 thread): every group's nodes, explicit terms
and measured kernel time. The cost model is trained on one model and must rank the other's groups.
"""
import json
import math
import os
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_fusion  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata", "measured_groups.jsonl")


def load():
    with open(DATA) as f:
        return [json.loads(line) for line in f]


class CostModelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import torch
        torch.set_num_threads(1)
        cls.records = load()
        features = [f for r in cls.records for f in r["features"]]
        cls.encoder = train_fusion.train_autoencoder(torch, features, epochs=300)

    def predictions(self, train_model, test_model):
        train = [r for r in self.records if r["model"] == train_model]
        test = [r for r in self.records if r["model"] == test_model]
        cost, _ = train_fusion.train_cost_model(train, self.encoder, quiet=True)
        pred, measured = [], []
        for r in test:
            emb = train_fusion.forward(self.encoder, np.array(r["features"]))
            for g, ms in zip(r["groups"], r["ms"]):
                x = train_fusion.group_features(emb, g["nodes"], g["terms"])[None, :]
                pred.append(math.exp(cost.predict(x)[0]))
                measured.append(ms)
        return np.array(pred), np.array(measured)

    def test_ranks_the_slowest_and_the_fastest_measured_group_of_an_unseen_model(self):
        pred, measured = self.predictions("resnet18", "mobilenet_v3_small")
        slow, fast = int(np.argmax(measured)), int(np.argmin(measured))
        self.assertGreater(measured[slow], 5 * measured[fast])
        self.assertGreater(pred[slow], pred[fast])

    def test_ranks_most_pairs_that_differ_by_2x(self):
        pred, measured = self.predictions("resnet18", "mobilenet_v3_small")
        right = total = 0
        for i in range(len(measured)):
            for j in range(len(measured)):
                if measured[i] > 2 * measured[j]:
                    total += 1
                    right += pred[i] > pred[j]
        self.assertGreater(total, 50)
        self.assertGreater(right / total, 0.75, f"{right} of {total} pairs")


class PolicyFileTest(unittest.TestCase):
    def test_training_refuses_to_overwrite_a_policy_without_force(self):
        with tempfile.NamedTemporaryFile(suffix=".policy") as existing:
            args = type("Args", (), {"data": DATA, "models": ["resnet18"], "out": existing.name, "force": False,
                                     "episodes": 1, "threads": 1})
            with self.assertRaises(SystemExit):
                train_fusion.train(args)

    def test_training_takes_only_records_of_its_thread_count(self):
        # testdata's records predate `collect --threads` (no "threads" key): they count as 1 thread.
        with tempfile.TemporaryDirectory() as tmp:
            args = type("Args", (), {"data": DATA, "models": ["resnet18"], "out": os.path.join(tmp, "p.policy"),
                                     "force": False, "episodes": 1, "threads": 2})
            with self.assertRaisesRegex(AssertionError, "at 2 thread"):
                train_fusion.train(args)
            self.assertFalse(os.path.exists(args.out))

    def test_state_layout_matches_the_compiler(self):
        # adaptive_fusion.h: [e(seed), e(chain 0..K-1) zero-padded, |chain| / K, legal(1..K)]
        emb = np.arange(12, dtype=np.float64).reshape(6, 2)
        s = train_fusion.state_of(emb, {"seed": 1, "chain": [3, 4]})
        k = train_fusion.MAX_JOIN
        self.assertEqual(len(s), 2 * (1 + k) + 1 + k)
        np.testing.assert_array_equal(s[:6], [2, 3, 6, 7, 8, 9])
        self.assertTrue(np.all(s[6:2 * (1 + k)] == 0))
        self.assertAlmostEqual(s[2 * (1 + k)], 2 / k)
        np.testing.assert_array_equal(s[2 * (1 + k) + 1:], [1, 1] + [0] * (k - 2))

    def test_rule_hint_follows_the_compiler(self):
        # adaptive_fusion.h: with the hint, the state ends with the one-hot of rule's action, the
        # longest chain prefix inside the seed's rule group (RuleAction).
        group_of = {1: 0, 3: 0, 4: 1, 5: 0}
        decision = {"seed": 1, "chain": [3, 4, 5]}
        self.assertEqual(train_fusion.rule_action(group_of, decision), 1)  # 4 is in another group: stop there
        self.assertEqual(train_fusion.rule_action(group_of, {"seed": 4, "chain": [5]}), 0)
        emb = np.zeros((6, 2))
        k = train_fusion.MAX_JOIN
        s = train_fusion.state_of(emb, decision, rule_k=1)
        self.assertEqual(len(s), 2 * (1 + k) + 1 + k + k + 1)
        hint = s[2 * (1 + k) + 1 + k:]
        np.testing.assert_array_equal(hint, [0, 1] + [0] * (k - 1))
        self.assertEqual(len(train_fusion.state_of(emb, decision)), 2 * (1 + k) + 1 + k)


if __name__ == "__main__":
    unittest.main()
