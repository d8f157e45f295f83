# Fetches a Debian source package's files through a private deb-src list, without touching
# the machine's apt configuration. Sourced by scripts/build-qemu.sh and the bench/ scripts
# that build code from Debian's sources (bench/projection/real_apps.sh).
#
#   . scripts/lib/apt-source.sh
#   apt_source_fetch WORK SUITE PACKAGE[/SUITE] LABEL
#
# Finds the Debian mirror and archive keyring this machine's apt already uses (deb822
# .sources files first, then one-line .list files), writes a source list for SUITE (the
# release itself, "$APT_SOURCE_CODENAME", or e.g. "$APT_SOURCE_CODENAME-backports") into
# WORK, updates that index only, and runs `apt-get source --download-only PACKAGE` in WORK;
# apt checks what it fetches against the signed index. The log is WORK/apt.log. Exits
# through the caller's `fail` function (which must print and exit) when a step fails;
# whether the wanted file arrived is for the caller to check (apt's own exit status is
# ignored: it fails on a missing dpkg-dev even when the download worked).
#
# APT_SOURCE_CODENAME is set on loading (from /etc/os-release), so callers can name suites.

APT_SOURCE_CODENAME=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")

# Sets APT_SOURCE_MIRROR and APT_SOURCE_KEYRING for the machine's release.
apt_source_mirror() {
  local codename=$APT_SOURCE_CODENAME f m
  [ -n "$codename" ] || fail "cannot tell the Debian release (no VERSION_CODENAME in /etc/os-release)"
  APT_SOURCE_MIRROR=""
  APT_SOURCE_KEYRING=""
  local restore_nullglob
  restore_nullglob=$(shopt -p nullglob || true)
  shopt -s nullglob
  for f in /etc/apt/sources.list.d/*.sources; do
    # deb822 stanzas: the first whose Suites list the release itself (not -security).
    m=$(awk -v c="$codename" '
      BEGIN { RS = ""; FS = "\n" }
      {
        uris = ""; suites = ""; key = ""
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^URIs:/) { uris = $i; sub(/^URIs:[ \t]*/, "", uris) }
          if ($i ~ /^Suites:/) { suites = " " $i " "; sub(/^ Suites:/, "", suites) }
          if ($i ~ /^Signed-By:/) { key = $i; sub(/^Signed-By:[ \t]*/, "", key) }
        }
        if (index(suites, " " c " ") && uris != "") { split(uris, u, " "); print u[1] "\t" key; exit }
      }' "$f")
    if [ -n "$m" ]; then
      APT_SOURCE_MIRROR=${m%%$'\t'*}
      APT_SOURCE_KEYRING=${m#*$'\t'}
      break
    fi
  done
  if [ -z "$APT_SOURCE_MIRROR" ]; then
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [ -f "$f" ] || continue
      APT_SOURCE_MIRROR=$(awk -v c="$codename" '$1 == "deb" {
          i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
          if ($(i + 1) == c) { print $i; exit } }' "$f")
      [ -n "$APT_SOURCE_MIRROR" ] && break
    done
  fi
  eval "$restore_nullglob"
  [ -n "$APT_SOURCE_MIRROR" ] \
    || fail "no Debian mirror for $codename found in /etc/apt/sources.list or /etc/apt/sources.list.d"
  case "$APT_SOURCE_KEYRING" in /*) ;; *) APT_SOURCE_KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg ;; esac
  [ -f "$APT_SOURCE_KEYRING" ] \
    || fail "the Debian archive keyring $APT_SOURCE_KEYRING is missing (apt-get install debian-archive-keyring)"
}

apt_source_fetch() {
  local work=$1 suite=$2 package=$3 label=$4
  apt_source_mirror
  mkdir -p "$work/lists/partial" "$work/parts"
  echo "deb-src [signed-by=$APT_SOURCE_KEYRING] $APT_SOURCE_MIRROR $suite main" >"$work/src.list"
  local opts=(-o "Dir::Etc::SourceList=$work/src.list" -o "Dir::Etc::SourceParts=$work/parts"
              -o "Dir::State::Lists=$work/lists" -o "APT::Sandbox::User=root")
  echo "$label: fetching the ${package%%/*} source from $APT_SOURCE_MIRROR ($suite)" >&2
  apt-get "${opts[@]}" update -qq >"$work/apt.log" 2>&1 \
    || { tail -5 "$work/apt.log" >&2; fail "apt-get update of the $suite source index failed"; }
  (cd "$work" && apt-get "${opts[@]}" source --download-only "$package" >>"$work/apt.log" 2>&1) || true
}
