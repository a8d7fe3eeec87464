# fish completion for jobctl(1).
#
# The binary decides what Tab offers (`jobctl __complete -- WORDS... CURRENT`,
# cli/cmd_complete.cpp) from its own command table; this function only hands
# it the words as typed and shows its answer. The answer's first line says
# how to complete (words, files, stores: files but SQLite's FILE-wal,
# FILE-shm and FILE-journal, dirs, or a command from word N) and which
# start of the current word to keep (`--db=`, `sqlite:`); each further line
# is a candidate and, after a tab, its description.
# Installed as share/fish/vendor_completions.d/jobctl.fish.

function __jobctl_complete
    set -l tokens (commandline -opc)
    set -l cur (commandline -ct)
    set -l bin $tokens[1]
    string match -q -- '~/*' $bin; and set bin $HOME/(string sub -s 3 -- $bin)

    set -l answer ($bin __complete -- $tokens[2..-1] $cur 2>/dev/null)
    set -q answer[1]; or return
    set -l how (string split -m 1 \t -- $answer[1])
    set -l keep $how[2]
    switch $how[1]
        case command
            # `submit -- CMD ARGS`: CMD and its arguments as a command line
            # of their own.
            set -l rest
            set -l from (math $keep + 1)
            test $from -le (count $tokens); and set rest (string escape -- $tokens[$from..-1])
            complete -C (string join ' ' -- $rest "$cur")
            return
        case files
            printf '%s\n' $keep(__fish_complete_path (string sub -s (math (string length -- "$keep") + 1) -- "$cur"))
        case stores
            printf '%s\n' $keep(__fish_complete_path (string sub -s (math (string length -- "$keep") + 1) -- "$cur") |
                string match -v -r -- '-(wal|shm|journal)(\t.*)?$')
        case dirs
            printf '%s\n' $keep(__fish_complete_directories (string sub -s (math (string length -- "$keep") + 1) -- "$cur"))
    end
    printf '%s\n' $keep$answer[2..-1]
end

complete -c jobctl -f -a '(__jobctl_complete)'
