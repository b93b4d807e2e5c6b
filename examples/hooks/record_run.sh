#!/bin/sh
# A shell hook for a non-Python agent: ask before, record after.
#   ./record_run.sh "make the test suite pass"
set -eu
task="$1"

lamarck recall "$task"                      # the "Lessons:" section for the prompt
lamarck check "shell:pytest tests/"         # what is on file before running it

# ... the agent works; the hook writes down what really ran ...
cat <<JSON | lamarck record-outcome -
{
  "session_id": "hook-$$",
  "goal": "$task",
  "events": [
    {"type": "check", "kind": "test", "result": "failed", "operation": "shell:pytest tests/",
     "target": "test suite"},
    {"type": "check", "kind": "test", "result": "passed", "operation": "shell:pytest",
     "target": "test suite"}
  ]
}
JSON
