#!/usr/bin/env bash
# Adaptive fusion's offline training (tools/fusion/train_fusion.py): the XGBoost cost model trained on
# measured groups of one model must rank an unseen model's measured groups; the DQN state layout must
# match the compiler's; training must not overwrite a policy without --force.
# Prints its log and, as its last line, "<passed> <failed>".
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
log="$(/usr/bin/python3 tools/fusion/train_fusion_test.py -v 2>&1)"
echo "$log"
ran=$(echo "$log" | sed -n 's/^Ran \([0-9]*\) tests\? .*/\1/p')
bad=$(echo "$log" | grep -cE ' \.\.\. (FAIL|ERROR)$')
if [ -z "$ran" ]; then
  echo "0 1"
else
  echo "$((ran - bad)) $bad"
fi
