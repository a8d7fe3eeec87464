# bash completion for jobctl(1)                              -*- shell-script -*-
#
# The binary decides what Tab offers (`jobctl __complete -- WORDS... CURRENT`,
# cli/cmd_complete.cpp) from its own command table; this script only hands
# it the words as typed and shows its answer. The answer's first line says
# how to complete (words, files, stores: files but SQLite's FILE-wal,
# FILE-shm and FILE-journal, dirs, or a command from word N) and which
# start of the current word to keep (`--db=`, `sqlite:`); each further line
# is a candidate and, after a tab, its description (unused by bash).
# Installed as share/bash-completion/completions/jobctl.

# Sets words, cword and cur to the line up to the cursor, split where the
# user put blanks. readline also splits at the ':' and '=' of `--db
# sqlite:PATH`, `--db=PATH` and `postgres://…` (COMP_WORDBREAKS);
# bash-completion joins them again.
_jobctl_words() {
    if declare -F _init_completion >/dev/null; then
        _init_completion -n := || return 1
    else
        local line=${COMP_LINE:0:COMP_POINT}
        read -ra words <<<"$line"
        [[ ${#words[@]} -eq 0 || $line == *[[:space:]] ]] && words+=("")
        cword=$((${#words[@]} - 1))
        cur=${words[cword]}
    fi
}

# Removes from each COMPREPLY entry the start of the current word that
# readline does not replace: all of it up to its last COMP_WORDBREAKS
# character (`--db=sqlite:` of `--db=sqlite:/tm`).
_jobctl_ltrim_breaks() {
    local keep=${cur%"${cur##*[$COMP_WORDBREAKS]}"} i
    [[ -z $keep ]] && return
    for i in "${!COMPREPLY[@]}"; do COMPREPLY[i]=${COMPREPLY[i]#"$keep"}; done
}

# COMPREPLY from the file names (with -d, directories) that complete $1.
_jobctl_paths() {
    local cur=$1
    if declare -F _filedir >/dev/null; then
        _filedir ${2:+"$2"}
    else
        mapfile -t COMPREPLY < <(compgen "${2:--f}" -- "$cur")
    fi
}

# `submit -- CMD ARGS`: completes the words from words[$1] on as a command
# line of their own. _command_offset counts readline's words, which may be
# split finer than ours.
_jobctl_command_from() {
    local i j=0 joined
    for ((i = 0; i < $1; i++)); do
        joined=${COMP_WORDS[j++]}
        while [[ $joined != "${words[i]}" ]] && ((j < COMP_CWORD)); do joined+=${COMP_WORDS[j++]}; done
    done
    if declare -F _command_offset >/dev/null; then
        _command_offset "$j"
    elif (($1 == cword)); then
        mapfile -t COMPREPLY < <(compgen -c -- "$cur")
    else
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    fi
}

_jobctl() {
    local cur prev words cword
    _jobctl_words || return 0
    local bin=${words[0]:-jobctl}
    # shellcheck disable=SC2088 # a literal "~/" as typed, expanded here
    [[ $bin == "~/"* ]] && bin=$HOME/${bin#"~/"}

    local -a answer
    mapfile -t answer < <("$bin" __complete -- "${words[@]:1:cword-1}" "$cur" 2>/dev/null)
    ((${#answer[@]})) || return 0
    local how=${answer[0]%%$'\t'*} keep=${answer[0]#*$'\t'}
    local want=${cur#"$keep"} line word i
    COMPREPLY=()
    case $how in
        command)
            _jobctl_command_from "$keep"
            return 0
            ;;
        files) _jobctl_paths "$want" ;;
        stores)
            _jobctl_paths "$want"
            for i in "${!COMPREPLY[@]}"; do
                [[ ${COMPREPLY[i]} == *-wal || ${COMPREPLY[i]} == *-shm || ${COMPREPLY[i]} == *-journal ]] &&
                    unset 'COMPREPLY[i]'
            done
            COMPREPLY=("${COMPREPLY[@]}")
            ;;
        dirs) _jobctl_paths "$want" -d ;;
    esac
    # The candidates that start with what is typed (ids in any case), then
    # all with the start of the word that is kept.
    for line in "${answer[@]:1}"; do
        word=${line%%$'\t'*}
        [[ ${word,,} == "${want,,}"* ]] && COMPREPLY+=("$word")
    done
    for i in "${!COMPREPLY[@]}"; do COMPREPLY[i]=$keep${COMPREPLY[i]}; done
    _jobctl_ltrim_breaks
    return 0
}

complete -F _jobctl jobctl

# ex: filetype=sh
