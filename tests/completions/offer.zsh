# What zsh completion offers for a typed line.
#
#   zsh -f offer.zsh SCRIPT LINE
#
# Starts an interactive zsh in a pseudo-terminal (zpty) with compinit and
# SCRIPT loaded, types LINE and a Tab, and lets the real completion system
# run. Only compadd is wrapped: instead of listing its matches it prints
# each as the whole word it makes (with the prefixes compset and _files put
# around it) and its description, one a line.
zmodload zsh/zpty || { print -u2 "offer.zsh: no zsh/zpty module"; exit 2 }

setup=$(mktemp "${TMPDIR:-/tmp}/offer-zsh.XXXXXX")
trap 'rm -f $setup; zpty -d shell 2>/dev/null' EXIT
cat >$setup <<EOF
PROMPT= RPROMPT=
stty columns 1000  # _describe cuts descriptions to the terminal's width
autoload -Uz compinit && compinit -u -C -d ~/.zcompdump-offer  # made once, then read
source ${(q)1}
bindkey '^I' complete-word
zstyle ':completion:*' insert-tab false
zstyle ':completion:*' list-grouped false
zmodload zsh/zutil
compprefuncs=(_offer_begin)
comppostfuncs=(_offer_end)
_offer_begin() { print -r -- '<<offer'; }
_offer_end() { print -r -- 'offer>>'; }
EOF
cat >>$setup <<'EOF'
compadd() {
  # Calls that only ask for the matches (-O, -A, -D) are left alone.
  if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then
    builtin compadd "$@"
    return
  fi
  local -a hits displays
  local -A apre hpre hsuf asuf disp
  zparseopts -E P:=apre p:=hpre S:=asuf s:=hsuf d:=disp
  if [[ -n $disp ]]; then
    local d=${disp[-d]}
    if [[ $d == \(* ]]; then eval "displays=$d"; else displays=("${(@P)d}"); fi
  fi
  builtin compadd -A hits -D displays "$@"
  local i desc
  for (( i = 1; i <= $#hits; i++ )); do
    desc=${displays[i]-}
    [[ $desc == *' -- '* ]] && desc=${desc#* -- } || desc=
    print -r -- "$IPREFIX${apre[-P]-}${hpre[-p]-}$hits[i]${hsuf[-s]-}${asuf[-S]-}"$'\t'"$desc"
  done
}
print -r -- 'ready'
EOF

zpty shell zsh -f -i
zpty -w shell "source ${(q)setup}"
zpty -r -m shell line '*ready*' || exit 2
zpty -w -n shell "$2"$'\t'

# Everything printed between the markers, up to a timeout.
integer inside=0 deadline=$(( SECONDS + 20 ))
while (( SECONDS < deadline )); do
  if ! zpty -r -t shell line; then
    sleep 0.05
    continue
  fi
  line=${${line%$'\n'}%$'\r'}
  if [[ $line == *'<<offer'* ]]; then
    inside=1
  elif [[ $line == *'offer>>'* ]]; then
    exit 0
  elif (( inside )); then
    print -r -- "$line"
  fi
done
print -u2 "offer.zsh: no answer to '$2'"
exit 2
