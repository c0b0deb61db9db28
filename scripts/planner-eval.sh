#!/usr/bin/env bash
# The offline planner's evaluation (agent/tests/agent/planner_eval/): every task of tasks.jsonl
# run over a real daemon serving the demo server, each truth computed by SQL at run time; prints
# right / wrong / cannot per category for the tuning half and the held-out half, and fails on
# any confidently wrong answer.
#
#   bash scripts/planner-eval.sh              the table
#   bash scripts/planner-eval.sh --show       and each task not answered right, with its answer
#   bash scripts/planner-eval.sh --all        and every task with its answer
#   bash scripts/planner-eval.sh --half held  one half only (tune or held)
#   bash scripts/planner-eval.sh --only typo  the tasks whose id contains the text
#   bash scripts/planner-eval.sh --set issue-24  the tasks of a named set (issue 24's questions)
set -euo pipefail
cd "$(dirname "$0")/.."
while [ $# -gt 0 ]; do
    case "$1" in
        --show) export PLANNER_EVAL_SHOW=failures ;;
        --all) export PLANNER_EVAL_SHOW=all ;;
        --half) export PLANNER_EVAL_HALF="$2"; shift ;;
        --only) export PLANNER_EVAL_ONLY="$2"; shift ;;
        --set) export PLANNER_EVAL_SET="$2"; shift ;;
        *) echo "unknown option $1 (use --show, --all, --half tune|held, --only TEXT, --set NAME)" >&2; exit 2 ;;
    esac
    shift
done
cargo build -q -p tool-cli-daemon
exec cargo test -q -p tool-cli-agent --test agent planner_eval -- --nocapture --test-threads 1
