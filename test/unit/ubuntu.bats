#!/usr/bin/env bats
# Ubuntu's NVIDIA driver packages against nvidia-p2p-dkms's control fields,
# resolved by the real apt (simulation only, in a private apt directory, no
# network). The data: test/fixtures/ubuntu/*.control, every binary stanza of
# Ubuntu's debian/control for 570 (570.211.01), 575 (575.64.03), 580
# (580.142) and 580-server (580.126.20) as published in
# canonical/nvidia-graphics-drivers, made into a package index here the way
# dpkg-gencontrol would fill it for amd64 (${binary:Version} -> the Debian
# version; ${misc:Depends}, ${shlibs:Depends} and the like, which name
# Ubuntu's base libraries, dropped; every other package a dependency names
# gets an empty stand-in). Nothing here ran on Ubuntu: it shows what apt
# decides with these control fields, not that the modules work there. After
# the swap on a machine with Ubuntu's driver (what apt brought in marked
# automatic, as apt marks it), apt-get autoremove removes nothing; and
# without Ubuntu's driver (NVIDIA's .run userspace) apt installs ours with
# none of Ubuntu's driver packages but the GSP firmware.

load ../test_helper
load ../real/debian_pkg

setup() {
  common_setup
  export REPO_ROOT="${BATS_TEST_DIRNAME}/../.."
  command -v apt-get >/dev/null 2>&1 || skip "apt-get is not installed"
  FIXTURES="${BATS_TEST_DIRNAME}/../fixtures/ubuntu"
}

# index_of FIXTURE: its stanzas as a Packages index for amd64, then stand-ins
# for what they depend on that they do not hold.
index_of() {
  local version
  version=$(sed -n 's/^# Version: //p' "$1")
  awk -v V="${version}" -f /dev/stdin "$1" <<'AWK'
BEGIN { RS = ""; FS = "\n" }
function rel(field, value,    items, n, i, alts, m, j, a, out, kept, keep, arches) {
  n = split(value, items, ",")
  out = ""
  for (i = 1; i <= n; i++) {
    m = split(items[i], alts, "|")
    kept = ""
    for (j = 1; j <= m; j++) {
      a = alts[j]
      gsub(/^[ \t]+|[ \t]+$/, "", a)
      if (a == "" || a ~ /\$\{[a-z]+:[A-Za-z]+Depends\}|\$\{nvidia:/ || a ~ /:i386/) continue
      if (match(a, /\[[^]]*\]/)) {
        arches = substr(a, RSTART + 1, RLENGTH - 2)
        keep = (arches ~ /!/) ? (arches !~ /!amd64/) : (arches ~ /(^| )amd64( |$)/)
        a = substr(a, 1, RSTART - 1)
        gsub(/[ \t]+$/, "", a)
        if (!keep) continue
      }
      gsub(/\$\{(binary|source):Version\}/, V, a)
      if (a ~ /\$\{/) continue
      kept = kept (kept ? " | " : "") a
      if (field == "Depends" || field == "Pre-Depends") { split(a, w, " "); dep[w[1]] = 1 }
    }
    if (kept != "") out = out (out ? ", " : "") kept
  }
  return out
}
{
  delete f; delete order; k = 0; name = ""; field = ""
  for (i = 1; i <= NF; i++) {
    line = $i
    if (line ~ /^#/) continue
    if (line ~ /^[ \t]/) { f[field] = f[field] " " line; continue }
    field = substr(line, 1, index(line, ":") - 1)
    f[field] = substr(line, index(line, ":") + 1)
    order[++k] = field
  }
  if (!("Package" in f)) next
  name = f["Package"]; gsub(/[ \t]/, "", name)
  if (f["Architecture"] !~ /amd64|all|any/) next
  have[name] = 1
  s = "Package: " name "\nVersion: " V "\nArchitecture: amd64\n"
  for (i = 1; i <= k; i++) {
    field = order[i]
    if (field == "Package" || field == "Architecture" || field == "Version" || field ~ /^X/ || field == "Description") continue
    if (field ~ /^(Depends|Pre-Depends|Recommends|Suggests|Conflicts|Breaks|Replaces|Provides)$/) {
      v = rel(field, f[field])
      if (field == "Provides") { n = split(v, pv, ", "); for (j = 1; j <= n; j++) { split(pv[j], w, " "); have[w[1]] = 1 } }
      if (v != "") s = s field ": " v "\n"
    } else if (f[field] !~ /\$\{/) {
      s = s field ":" f[field] "\n"
    }
  }
  s = s "Filename: pool/" name "_" V "_amd64.deb\nSize: 1\nDescription: " name "\n"
  out[++nout] = s
}
END {
  for (i = 1; i <= nout; i++) print out[i]
  for (d in dep) if (!(d in have)) printf "Package: %s\nVersion: 9999\nArchitecture: amd64\nFilename: pool/%s.deb\nSize: 1\nDescription: stand-in\n\n", d, d
}
AWK
}

# apt_setup FIXTURE [TAG]: a private apt state whose one source is the
# fixture's index, with nvidia-p2p-dkms of TAG (its control file as build.sh
# package writes it) when given.
apt_setup() {
  A="${BATS_TEST_TMPDIR}/apt"
  rm -rf "${A}"
  mkdir -p "${A}/repo"
  index_of "$1" >"${A}/repo/Packages"
  if [[ -n ${2:-} ]]; then
    {
      control_text "$2" "${BATS_TEST_TMPDIR}" | sed '/^Installed-Size:/d; /^Description:/,$d'
      printf 'Filename: pool/ours.deb\nSize: 1\nDescription: nvidia-p2p-dkms\n\n'
    } >>"${A}/repo/Packages"
  fi
  apt_local "${A}"
}

# installed PACKAGE...: dpkg's status as if apt had installed PACKAGE... from
# the index (what the simulation would install), and apt's marks: what came
# with them automatic.
installed() {
  local names p
  names=$(apt-get "${APT_OPTS[@]}" -s install "$@" | sed -n -E 's/^Inst ([^ ]+) .*/\1/p')
  awk -v names=" $(tr '\n' ' ' <<<"${names}")" 'BEGIN { RS = ""; FS = "\n" }
    { split($1, p, ": "); if (index(names, " " p[2] " ")) { print $1; print "Status: install ok installed"; for (i = 2; i <= NF; i++) if ($i !~ /^(Filename|Size):/) print $i; print "" } }' \
    "${A}/repo/Packages" >"${A}/status"
  for p in ${names}; do
    [[ " $* " == *" ${p} "* ]] || printf 'Package: %s\nArchitecture: amd64\nAuto-Installed: 1\n\n' "${p}"
  done >"${A}/extended_states"
}

# branch_cases LABEL TAG: Ubuntu's driver of TAG (fixture LABEL) with its
# own kernel module package, and with ours in its place.
branch_cases() {
  local label=$1 tag=$2 b=${2%%.*} flavour=${3:-} fw
  fw="nvidia-firmware-${b}${flavour}-${tag}"
  apt_setup "${FIXTURES}/${label}.control"
  # without ours: Ubuntu's own DKMS package and the firmware (the dependency is real)
  run apt-get "${APT_OPTS[@]}" -s install "nvidia-driver-${b}${flavour}-open"
  assert_success
  assert_line --regexp "^Inst nvidia-dkms-${b}${flavour}-open "
  assert_line --regexp "^Inst ${fw} "
  apt_setup "${FIXTURES}/${label}.control" "${tag}"
  # a new machine: the -open driver and ours, none of Ubuntu's kernel module packages
  run apt-get "${APT_OPTS[@]}" -s install "nvidia-driver-${b}${flavour}-open" nvidia-p2p-dkms
  assert_success
  assert_line --regexp "^Inst nvidia-p2p-dkms \(${tag}-1 "
  refute_line --regexp "^Inst nvidia-dkms-"
  assert_line --regexp "^Inst ${fw} "
  # the closed flavour's userspace (the same libraries) takes it too
  run apt-get "${APT_OPTS[@]}" -s install "nvidia-driver-${b}${flavour}" nvidia-p2p-dkms
  assert_success
  refute_line --regexp "^Inst nvidia-dkms-"
  # a machine with Ubuntu's driver installed: apt swaps the kernel module
  # package for ours and keeps the driver and the firmware
  apt_setup "${FIXTURES}/${label}.control"
  installed "nvidia-driver-${b}${flavour}-open"
  apt_setup "${FIXTURES}/${label}.control" "${tag}"
  installed "nvidia-driver-${b}${flavour}-open"
  run apt-mark "${APT_OPTS[@]}" showauto
  assert_line "nvidia-dkms-${b}${flavour}-open"
  assert_line "nvidia-kernel-common-${b}${flavour}"
  run apt-get "${APT_OPTS[@]}" -s install nvidia-p2p-dkms
  assert_success
  assert_line --regexp "^Remv nvidia-dkms-${b}${flavour}-open "
  refute_line --regexp "^Remv nvidia-driver-"
  refute_line --regexp "^Remv ${fw} "
  assert_line --regexp "^Inst nvidia-p2p-dkms "
  # ... and after the swap, apt-get autoremove removes nothing
  printf '%s\n' "${output}" >"${A}/swap.sim"
  apt_applied "${A}" "${A}/swap.sim" nvidia-p2p-dkms "" "${APT_OPTS[@]}"
  run apt-get "${APT_OPTS[@]}" -s autoremove
  assert_success
  refute_line --regexp '^Remv '
  # NVIDIA's .run userspace (no driver package; recommendations on): ours,
  # and of Ubuntu's packages the GSP firmware only
  apt_setup "${FIXTURES}/${label}.control" "${tag}"
  run apt-get "${APT_OPTS[@]}" -o APT::Install-Recommends=true -s install nvidia-p2p-dkms
  assert_success
  assert_line --regexp "^Inst nvidia-p2p-dkms \(${tag}-1 "
  assert_line --regexp "^Inst ${fw} "
  refute_line --regexp '^Inst (nvidia-(driver|headless|kernel-common|kernel-source|utils|compute-utils)-|libnvidia-)'
}

@test "Ubuntu 570 (570.211.01): nvidia-driver-570-open takes nvidia-p2p-dkms for nvidia-dkms-570-open; the firmware comes with nvidia-kernel-common-570" {
  branch_cases 570 570.211.01
}

@test "Ubuntu 575 (575.64.03): nvidia-driver-575-open takes nvidia-p2p-dkms for nvidia-dkms-575-open" {
  branch_cases 575 575.64.03
}

@test "Ubuntu 580 (580.142): nvidia-driver-580-open takes nvidia-p2p-dkms for nvidia-dkms-580-open" {
  branch_cases 580 580.142
}

@test "Ubuntu 580-server (580.126.20): nvidia-driver-580-server-open takes nvidia-p2p-dkms for nvidia-dkms-580-server-open" {
  branch_cases 580-server 580.126.20 -server
}

@test "Ubuntu: nvidia-p2p-dkms of another tag never serves a driver (apt would remove the driver instead)" {
  apt_setup "${FIXTURES}/580.control"
  installed nvidia-driver-580-open
  apt_setup "${FIXTURES}/580.control" 580.126.20
  installed nvidia-driver-580-open
  run apt-get "${APT_OPTS[@]}" -s install nvidia-p2p-dkms
  assert_line --regexp "^Remv nvidia-driver-580-open "
}

@test "Ubuntu fixtures: each is Ubuntu's published control file, with its source and version" {
  local f
  for f in "${FIXTURES}"/*.control; do
    run sed -n '1,6p' "${f}"
    assert_line --regexp '^# source: https://github.com/canonical/nvidia-graphics-drivers, branch '
    assert_line --regexp '^# debian/control at commit [0-9a-f]{40}$'
    assert_line --regexp '^# Version: [0-9.]+-0ubuntu'
    run grep -c '^Package: ' "${f}"
    [[ ${output} -ge 20 ]]
  done
}
