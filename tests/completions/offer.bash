# What bash completion offers for a typed line.
#
#   bash --norc offer.bash SCRIPT LINE
#
# Loads Debian's bash-completion and SCRIPT, then calls the completion
# function for LINE (the cursor at its end) with COMP_WORDS, COMP_CWORD,
# COMP_LINE and COMP_POINT as readline sets them: split at blanks and, into
# words of their own, at runs of the other COMP_WORDBREAKS characters (the
# ':' of sqlite:PATH, the '=' of --db=PATH, the '@' of user@host). Quotes
# are not handled. Prints each candidate as the whole word it makes once
# readline has put it in place of its own word (the text after the last
# COMP_WORDBREAKS character), one a line.
set -u
# shellcheck disable=SC1091
source /usr/share/bash-completion/bash_completion
# shellcheck disable=SC1090
source "$1"
line=$2

is_break() { [[ $1 != [[:space:]] && $COMP_WORDBREAKS == *"$1"* ]]; }

words=() word=
for ((i = 0; i < ${#line}; i++)); do
    c=${line:i:1}
    if [[ $c == [[:space:]] ]]; then
        [[ -n $word ]] && words+=("$word")
        word=
        continue
    fi
    # A run of break characters is a word of its own.
    if [[ -n $word ]]; then
        is_break "$c"
        now=$?
        is_break "${word: -1}"
        ((now != $?)) && words+=("$word") && word=
    fi
    word+=$c
done
words+=("$word")

COMP_WORDS=("${words[@]}")
COMP_CWORD=$((${#words[@]} - 1))
COMP_LINE=$line
COMP_POINT=${#line}
COMP_TYPE=9
COMP_KEY=9
COMPREPLY=()
spec=$(complete -p jobctl)
func=${spec#*-F }
func=${func%% *}
"$func" jobctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]:-}" 2>/dev/null

whole=${line##*[[:space:]]}
kept=${whole%"${line##*[$COMP_WORDBREAKS]}"}
for reply in "${COMPREPLY[@]}"; do printf '%s%s\t\n' "$kept" "$reply"; done
