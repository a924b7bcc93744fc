#!/usr/bin/env bash
# The driver's steps (tools/upstream/series: "gen driver STEP") as a git
# repository to work on, and their patches (driver-steps/STEP.patch) made
# again from it: for when a change to the driver no longer fits a step's
# patch (series.sh says which), or to cut the driver in other steps.
#   driver-steps.sh DIR          DIR: the driver as the tree has it, one
#                                commit a step, last first ("final", then
#                                one "before STEP" commit for each later
#                                step, each taking that step's patch back
#                                out); a patch that no longer fits stops
#                                it, its .rej files left to mend by hand:
#                                commit as "before STEP", and run it again
#                                on DIR for the rest
#   driver-steps.sh --write DIR  the patches again from DIR's commits
set -euo pipefail
source "$(dirname "$0")/../rig/lib.sh"

here=$REPO_DIR/tools/upstream
prefix=(--src-prefix=a/drivers/infiniband/core/ --dst-prefix=b/drivers/infiniband/core/)
steps=$(awk '$1 == "gen" && $2 == "driver" { print $3 }' "$here/series")
git_dir() { git -C "$dir" -c user.name=driver-steps -c user.email=driver-steps@localhost "$@"; }

case ${1:-} in
--write)
	dir=${2:?usage: driver-steps.sh --write DIR}
	# The commit "before STEP" takes STEP out of the one before it.
	for step in $(tail -n +2 <<<"$steps"); do
		commit=$(git_dir log --format=%H -1 --grep="^before $step\$")
		[ -n "$commit" ] || die "$dir has no commit \"before $step\""
		git_dir diff "${prefix[@]}" "$commit" "$commit^" -- umad_rs > "$here/driver-steps/$step.patch"
		log "driver-steps/$step.patch written"
	done
	;;
-* | '') die "usage: driver-steps.sh [--write] DIR" ;;
*)
	dir=$1
	if [ ! -e "$dir/.git" ]; then
		mkdir -p "$dir/umad_rs"
		RIG_DRIVER_WHOLE=$dir/umad_rs bash "$here/series.sh" > /dev/null || true
		[ -e "$dir/umad_rs/Kbuild" ] || die "series.sh did not get as far as the driver"
		git_dir init -q
		git_dir add -A
		git_dir commit -q -m final
	fi
	# Again on DIR, after mending a step: the steps not taken out yet.
	for step in $(tail -n +2 <<<"$steps" | tac); do
		[ -z "$(git_dir log --format=%H -1 --grep="^before $step\$")" ] || continue
		(cd "$dir" && git apply -p4 --reject -R "$here/driver-steps/$step.patch") ||
			die "driver-steps/$step.patch does not fit: mend the .rej files in $dir, commit as \"before $step\", and run this again on $dir"
		git_dir add -A
		git_dir commit -q -m "before $step"
	done
	log "$dir: the driver's steps, last first; --write makes their patches again"
	;;
esac
