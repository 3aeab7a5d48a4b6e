"""The leak probe: run inside a built instance image, it fails the build when the repository
could tell an agent the answer.

Checked in /testbed: HEAD is the base commit; no ref (branch, tag, stash, notes, remote-tracking),
no remote, no reflog, no FETCH_HEAD/ORIG_HEAD; every object in the object database (loose or
packed, reachable or not) is reachable from the base commit, so no commit, tree or blob of the
future is there; no commit anywhere is dated after the base; the test diff's files are absent
(added ones) or at their base content (changed ones). Outside it: no leftover source copy.
The container has no network; its output is one JSON object.
"""

from __future__ import annotations

import json

PROBE = r"""
set -u
cd /testbed || { echo '{"problems": ["no /testbed"]}'; exit 0; }
p=()
head=$(git rev-parse HEAD 2>/dev/null)
[ "$head" = "$BASE" ] || p+=("HEAD is $head, not the base commit")
refs=$(git for-each-ref --format='%(refname)' | tr '\n' ' ')
[ -z "$refs" ] || p+=("refs present: $refs")
rem=$(git remote | tr '\n' ' ')
[ -z "$rem" ] || p+=("remotes present: $rem")
[ -z "$(git stash list 2>/dev/null)" ] || p+=("stash entries present")
for f in FETCH_HEAD ORIG_HEAD MERGE_HEAD; do [ ! -s .git/$f ] || p+=(".git/$f present"); done
[ -z "$(grep -v '^#' .git/packed-refs 2>/dev/null)" ] || p+=("packed refs present")
[ -z "$(find .git/logs -type f 2>/dev/null | head -1)" ] || p+=("reflog present: $(find .git/logs -type f | tr '\n' ' ')")
git cat-file --batch-all-objects --batch-check='%(objectname)' | sort > /tmp/.all
git rev-list --objects --no-object-names "$BASE" | sort > /tmp/.reach
extra=$(comm -23 /tmp/.all /tmp/.reach | wc -l)
[ "$extra" = 0 ] || p+=("$extra objects not reachable from the base commit (e.g. $(comm -23 /tmp/.all /tmp/.reach | head -3 | tr '\n' ' '))")
bdate=$(git show -s --format=%ct "$BASE")
newer=$(git cat-file --batch-all-objects --batch-check='%(objecttype) %(objectname)' | awk '$1=="commit"{print $2}' \
  | git cat-file --batch 2>/dev/null | awk -v b="$bdate" '/^committer /{if ($(NF-1) > b) n++} END{print n+0}')
[ "$newer" = 0 ] || p+=("$newer commits dated after the base commit")
for f in $ADDED; do [ ! -e "$f" ] || p+=("test file from the test diff present: $f"); done
for f in $CHANGED; do git diff --quiet HEAD -- "$f" 2>/dev/null || p+=("test file differs from base: $f"); done
[ ! -e /envsrc ] || p+=("/envsrc (a source copy) present")
rm -f /tmp/.all /tmp/.reach
printf '%s\n' "${p[@]}" | python3 -c 'import json,sys; print(json.dumps({"problems": [l for l in sys.stdin.read().splitlines() if l]}))'
"""


def diff_paths(test_patch: str) -> tuple[list[str], list[str]]:
    """(added, changed) paths of a diff."""
    from rlclimb.schemas.swe import split_files

    added, changed = [], []
    for path, chunk in split_files(test_patch):
        (added if "\n--- /dev/null" in chunk or "\nnew file mode" in chunk else changed).append(path)
    return added, changed


def run_probe(image: str, base_commit: str, test_patch: str) -> list[str]:
    """Problems found in `image` (empty: clean). Raises RuntimeError if the probe cannot run."""
    from .images import client

    added, changed = diff_paths(test_patch)
    env = {
        "BASE": base_commit,
        # word-split by the probe: paths with blanks are rare in test diffs and only weaken
        # the present-file check for themselves
        "ADDED": " ".join(added),
        "CHANGED": " ".join(changed),
    }
    out = client().containers.run(
        image,
        ["bash", "-c", PROBE],
        environment=env,
        network_disabled=True,
        mem_limit="1g",
        pids_limit=256,
        cap_drop=["ALL"],
        user="0:0",
        labels={"rlclimb.owner": "swe-probe"},
        remove=True,
        stdout=True,
        stderr=False,
    )
    text = out.decode(errors="replace").strip().splitlines()
    if not text:
        raise RuntimeError("leak probe printed nothing")
    return list(json.loads(text[-1])["problems"])
