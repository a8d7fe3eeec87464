# What fish completion offers for a typed line.
#
#   fish --no-config offer.fish COMPLETIONS_DIR LINE
#
# fish finds jobctl.fish in COMPLETIONS_DIR, ahead of its own directories,
# as it finds an installed one; `complete -C` prints each candidate, a tab
# and its description, one a line.
set -g fish_complete_path $argv[1] $fish_complete_path
complete -C $argv[2]
