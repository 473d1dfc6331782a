# shellcheck shell=bash
# lib/81-rebase-merge.sh: rebase's decisions per patch (see lib/83-rebase.sh):
# the base's snapshots, the mechanism check, the classification with the
# three-way merge, the proof that a compat patch is superseded, the new
# family's files, and the report of conflicts. Works in RB_DIR:
#   src/          the new tag's verified tree (pristine)
#   base/         the files the family reads, from the base tag's commit
#   snap/P/pre/   each file patch P touches, in the base before P...
#   snap/P/post/  ...and after P (the base's series applied at fuzz 0)
#   tree/         the new tree with every patch that applies or merged pushed
#                 (quilt; series applied.series, patches family/)
#   family/       the family on trial: merged patches replace the originals
#   rejects/P/    a conflicting patch's files with its rejected hunks
#   table         the per-patch table

declare -gA RB_RESULT=() RB_DETAIL=()
RB_NAMES=()
# The tested tokens the proof builds earned (build:7.2,...), for the new line.
RB_PROVEN_BUILDS=""
# Where ci/setup/chroot.sh is (a stand-in in the hermetic tests).
RB_CHROOT_SH="${NVP2P_CHROOT_SH:-$(dirname "${P2P_LIB_DIR}")/ci/setup/chroot.sh}"

# patch_files PATCH: the files PATCH changes, in its order.
patch_files() {
  sed -n -E 's|^\+\+\+ b/([^[:space:]]+).*|\1|p' "$1" | awk '!seen[$0]++'
}

# rebase_snapshots TAG FAMILY: RB_DIR/base and RB_DIR/snap (above) from
# RB_BASE, whose series applies at fuzz 0 (it is listed). Nothing without a
# base; a patch the base does not take ends the snapshots (no three-way merge
# from there on).
rebase_snapshots() {
  local tag=$1 family=$2 base=${RB_BASE} name commit
  local -a files=() names=() touched=()
  [[ -n ${base} ]] || return 0
  commit=${V_COMMIT[${base}]}
  rm -rf -- "${RB_DIR}/base" "${RB_DIR}/snap"
  mkdir -p "${RB_DIR}/base"
  mapfile -t files < <(family_files "${base}")
  mapfile -t files < <(git -c safe.directory='*' --git-dir="${RB_GITDIR}" ls-tree -r --name-only "${commit}" -- "${files[@]}" 2>/dev/null)
  [[ ${#files[@]} -gt 0 ]] || return 0
  git -c safe.directory='*' --git-dir="${RB_GITDIR}" archive "${commit}" -- "${files[@]}" | tar -x -C "${RB_DIR}/base"
  tag_series "${base}" "${RB_DIR}/base" | grep . >"${RB_DIR}/base.series" || true
  mapfile -t names <"${RB_DIR}/base.series"
  : >"${RB_DIR}/base.applied"
  for name in "${names[@]+"${names[@]}"}"; do
    mapfile -t touched < <(patch_files "$(family_dir "${base}")/${name}")
    snap_copy "${RB_DIR}/base" "${RB_DIR}/snap/${name}/pre" "${touched[@]}"
    printf '%s\n' "${name}" >>"${RB_DIR}/base.applied"
    if ! quilt_in "${RB_DIR}/base" "${base}" "${RB_DIR}/base.applied" push --fuzz=0 -q >>"${RB_DIR}/base.log" 2>&1; then
      rm -rf -- "${RB_DIR}/snap/${name}"
      warn "${name} does not apply at fuzz 0 to ${base}, the three-way base: no three-way merge for it and what follows"
      break
    fi
    snap_copy "${RB_DIR}/base" "${RB_DIR}/snap/${name}/post" "${touched[@]}"
  done
}

# snap_copy FROM TO FILE...: the FILEs that exist under FROM, copied to TO.
snap_copy() {
  local from=$1 to=$2 f
  shift 2
  mkdir -p "${to}"
  for f in "$@"; do
    [[ -e ${from}/${f} ]] || continue
    mkdir -p "${to}/$(dirname "${f}")"
    cp -- "${from}/${f}" "${to}/${f}"
  done
}

# --- the mechanism ---------------------------------------------------------------

# rebase_mechanism TAG FAMILY: what moved, between RB_BASE and TAG, of what
# the family's P2P patches rely on, one line each; nothing when it holds (or
# without a base). Checked: every function a P2P hunk changes, every HAL entry
# p2p-0001 repoints, and the registry key of every "# requires:" line is still
# referenced (as itself or its _HAL wrapper) in each file that referenced it
# in the base; every registry key the options line sets is still read.
rebase_mechanism() {
  local tag=$1 family=$2 ids regex
  [[ -n ${RB_BASE} && -d ${RB_DIR}/snap ]] || return 0
  ids=$(mechanism_ids "${tag}" | awk -F'\t' 'NF == 2 && $1 != "" && !seen[$1]++')
  if [[ -n ${ids} ]]; then
    regex="($(cut -f1 <<<"${ids}" | paste -sd'|' -))(_HAL)?"
    mechanism_refs "${V_COMMIT[${RB_BASE}]}" "${regex}" >"${RB_DIR}/refs.base"
    mechanism_refs "${V_COMMIT[${tag}]}" "${regex}" >"${RB_DIR}/refs.new"
    awk -F'\t' -v base="${RB_BASE}" -v tag="${tag}" '
      FILENAME == ARGV[1] { why[$1] = $2; next }
      FILENAME == ARGV[2] { inbase[$1 "\t" $2] = 1; nbase[$1]++; next }
      { innew[$1 "\t" $2] = 1; nnew[$1]++ }
      END {
        for (id in nbase) {
          if (!(id in nnew)) { printf "%s (%s) is gone from %s\n", id, why[id], tag; continue }
          for (k in inbase) {
            split(k, p, "\t")
            if (p[1] == id && !(k in innew))
              printf "%s (%s) is no longer referenced in %s, as it was in %s\n", id, why[id], p[2], base
          }
        }
      }' <(printf '%s\n' "${ids}") "${RB_DIR}/refs.base" "${RB_DIR}/refs.new" | sort
  fi
  option_keys_unread "${tag}"
}

# mechanism_ids TAG: "ID<tab>why" for each function a P2P hunk of the base's
# series changes (the C function around it, in the base after the patch), each
# HAL entry a hunk in generated code repoints (pThis->__NAME__), and each
# registry key define behind a "# requires:" line.
mechanism_ids() {
  local tag=$1 name f line dir
  dir=$(family_dir "${RB_BASE}")
  while IFS= read -r name; do
    [[ ${name} == p2p-* && -d ${RB_DIR}/snap/${name}/post ]] || continue
    while IFS=$'\t' read -r f line; do
      printf '%s\tchanged by %s\n' "$(enclosing_function "${RB_DIR}/snap/${name}/post/${f}" "${line}")" "${name%.patch}"
    done < <(snapshot_hunk_lines "${RB_DIR}/snap/${name}" "${dir}/${name}" | grep -v -E $'/generated/[^\t]*\t' | grep -E $'\\.c\t')
    awk -v why="HAL entry repointed by ${name%.patch}" '
      /^\+\+\+ / { gen = ($2 ~ /\/generated\//); next }
      gen && /^-.*pThis->__[A-Za-z][A-Za-z0-9]*__/ {
        s = $0; sub(/.*pThis->__/, "", s); sub(/__.*/, "", s); print s "\t" why
      }' "${dir}/${name}"
  done <"${RB_DIR}/base.series"
  registry_key_defines
}

# snapshot_hunk_lines SNAP PATCH: "FILE<tab>LINE" for each region PATCH
# changes in the base: the line, in SNAP/post/FILE (the base's file after the
# patch), where the region starts. Taken from the base's own files, not from
# the patch's hunk headers, which count lines of the tag the patch was made on
# (a family's first tag) and can be far off in the base (its nearest tag).
snapshot_hunk_lines() {
  local snap=$1 f
  while IFS= read -r f; do
    [[ -f ${snap}/pre/${f} && -f ${snap}/post/${f} ]] || continue
    diff -U0 -- "${snap}/pre/${f}" "${snap}/post/${f}" |
      awk -v f="${f}" '/^@@ / { split($3, a, ","); l = substr(a[1], 2) + 0; print f "\t" (l > 0 ? l : 1) }'
  done < <(patch_files "$2")
}

# registry_key_defines: "DEFINE<tab>why" for the key name define of each
# "# requires: FILE NAME VALUE" (NV_REG_STR_RM_FORCE_P2P_TYPE for
# NV_REG_STR_RM_FORCE_P2P_TYPE_PCIEP2P: the longest "#define X "string"" of
# FILE, in the base, that NAME starts with).
registry_key_defines() {
  local conf file name value key
  conf="$(family_dir "${RB_BASE}")/modprobe.conf"
  while read -r file name value; do
    [[ -n ${value} && -f ${RB_DIR}/base/${file} ]] || continue
    key=$(sed -n -E 's/^#[[:space:]]*define[[:space:]]+([A-Z0-9_]+)[[:space:]]+".*/\1/p' "${RB_DIR}/base/${file}" |
      awk -v n="${name}" 'index(n "_", $1 "_") == 1 && length($1) > length(best) { best = $1 } END { print best }')
    [[ -n ${key} ]] && printf '%s\tregistry key of %s\n' "${key}" "${name}"
  done < <(sed -n -E 's/^#[[:space:]]*requires:[[:space:]]*//p' "${conf}")
}

# mechanism_refs COMMIT REGEX: "ID<tab>FILE" for each word matching REGEX
# (its _HAL suffix removed) in src/ and kernel-open/ of COMMIT.
mechanism_refs() {
  git -c safe.directory='*' --git-dir="${RB_GITDIR}" grep -o -w -E -e "$2" "$1" -- src kernel-open 2>/dev/null |
    awk -v c="$1:" '{ s = substr($0, length(c) + 1); i = index(s, ":"); f = substr(s, 1, i - 1); id = substr(s, i + 1)
                     sub(/_HAL$/, "", id); print id "\t" f }' | sort -u
}

# option_keys_unread TAG: each registry key the family's options line sets
# that neither TAG's source nor the family's patches name as "Key".
option_keys_unread() {
  local tag=$1 conf key dir
  dir=$(family_dir "${tag}")
  conf="${dir}/modprobe.conf"
  while IFS= read -r key; do
    [[ -n ${key} ]] || continue
    git -c safe.directory='*' --git-dir="${RB_GITDIR}" grep -q -F -e "\"${key}\"" "${V_COMMIT[${tag}]}" -- src 2>/dev/null && continue
    grep -q -h -E "^\+.*\"${key}\"" "${dir}"/*.patch 2>/dev/null && continue
    printf 'registry key %s (set by modprobe.conf) is read nowhere in %s\n' "${key}" "${tag}"
  done < <(sed -n -E 's/^options .*NVreg_RegistryDwords="([^"]*)".*/\1/p' "${conf}" | tr ';' '\n' | sed -n -E 's/^([A-Za-z0-9_]+)=.*/\1/p')
}

# --- per patch ---------------------------------------------------------------------

# rebase_classify TAG: RB_RESULT / RB_DETAIL for every patch of the family
# (RB_NAMES, series order); RB_DIR/tree ends with those that apply or merged.
rebase_classify() {
  local tag=$1 name dir rc check
  local -A inseries=()
  dir=$(family_dir "${tag}")
  mapfile -t RB_NAMES < <(family_patches "${tag}")
  while IFS= read -r name; do [[ -n ${name} ]] && inseries[${name}]=1; done <"${RB_DIR}/series"
  rm -rf -- "${RB_DIR}/tree"
  cp -a -- "${RB_DIR}/src" "${RB_DIR}/tree"
  : >"${RB_DIR}/applied.series"
  : >"${RB_DIR}/classify.log"
  for name in "${RB_NAMES[@]+"${RB_NAMES[@]}"}"; do
    if [[ -z ${inseries[${name}]+x} ]]; then
      check=$(applied_upstream_check "${dir}/${name}")
      if [[ -n ${check} ]] && upstream_has "${RB_DIR}/src" "${dir}/${name}"; then
        rb_set "${name}" left-out "${tag} already has the fix: ${check% *} has '${check#* }' (X-Applied-Upstream-If)"
      else
        check=$(applies_if_check "${dir}/${name}")
        rb_set "${name}" left-out "${tag} lacks the code it changes: ${check% *} has no '${check#* }' (X-Applies-If)"
      fi
      continue
    fi
    printf '%s\n' "${name}" >>"${RB_DIR}/applied.series"
    if quilt_in "${RB_DIR}/tree" "${tag}" "${RB_DIR}/applied.series" push --fuzz=0 >"${RB_DIR}/push.log" 2>&1; then
      cat "${RB_DIR}/push.log" >>"${RB_DIR}/classify.log"
      rb_set "${name}" applies "fuzz 0$(grep -q 'offset' "${RB_DIR}/push.log" && printf ', line offsets')"
      continue
    fi
    sed -i '$d' "${RB_DIR}/applied.series"
    if patch_reverses "${RB_DIR}/tree" "${dir}/${name}"; then
      rb_set "${name}" upstream "it reverse-applies at fuzz 0: ${tag} already holds its result"
      continue
    fi
    rc=0
    rebase_three_way "${tag}" "${name}" || rc=$?
    case ${rc} in
    0) rebase_merged "${tag}" "${name}" ;;
    3) rb_set "${name}" upstream "the three-way merge on ${RB_BASE} changes nothing: ${tag} already holds its result" ;;
    1)
      if [[ ${name} == compat-* ]]; then
        rb_set "${name}" superseded "upstream changed the same lines itself (${RB_MERGE_CONFLICTS})"
      else
        rb_set "${name}" conflict "does not merge with upstream's changes (${RB_MERGE_CONFLICTS})"
      fi
      ;;
    *) rb_set "${name}" conflict "does not apply at fuzz 0, and there is no three-way base for it (${RB_BASE:-no listed tag of the family in the source})" ;;
    esac
  done
}

rb_set() {
  RB_RESULT[$1]=$2
  RB_DETAIL[$1]=$3
}

# patch_reverses TREE PATCH: PATCH's result is already in TREE.
patch_reverses() {
  patch -d "$1" -p1 -R --dry-run -s -f --fuzz=0 <"$2" >/dev/null 2>&1
}

# rebase_three_way TAG NAME: 0 when NAME merged (RB_DIR/family/NAME is the
# merged patch), 1 on a conflict (RB_MERGE_CONFLICTS names the files), 2
# without a base for NAME, 3 when the merge changes nothing. Per file: git
# merge-file of the new tree's file with the base's before and after NAME.
RB_MERGE_CONFLICTS=""
rebase_three_way() {
  local tag=$1 name=$2 snap="${RB_DIR}/snap/$2" out="${RB_DIR}/merge/$2" f cur pre post changed=0 patch
  local -a files=() conflicts=()
  [[ -d ${snap}/post ]] || return 2
  patch="$(family_dir "${tag}")/${name}"
  mapfile -t files < <(patch_files "${patch}")
  rm -rf -- "${out}"
  for f in "${files[@]}"; do
    cur="${RB_DIR}/tree/${f}" pre="${snap}/pre/${f}" post="${snap}/post/${f}"
    mkdir -p "$(dirname "${out}/${f}")"
    if [[ ! -e ${pre} ]]; then
      if [[ ! -e ${cur} ]]; then
        cp -- "${post}" "${out}/${f}" && changed=1
      elif cmp -s "${cur}" "${post}"; then
        cp -- "${cur}" "${out}/${f}"
      else
        conflicts+=("${f} (added by the patch, a different one upstream)")
      fi
    elif [[ ! -e ${cur} ]]; then
      conflicts+=("${f} (gone from ${tag})")
    elif git merge-file -p -q "${cur}" "${pre}" "${post}" >"${out}/${f}" 2>/dev/null; then
      cmp -s "${out}/${f}" "${cur}" || changed=1
    else
      conflicts+=("${f}")
    fi
  done
  if [[ ${#conflicts[@]} -gt 0 ]]; then
    RB_MERGE_CONFLICTS=$(printf '%s, ' "${conflicts[@]}")
    RB_MERGE_CONFLICTS=${RB_MERGE_CONFLICTS%, }
    return 1
  fi
  [[ ${changed} -eq 1 ]] || return 3
  {
    sed '/^--- /,$d' "${patch}"
    for f in "${files[@]}"; do
      if [[ -e ${RB_DIR}/tree/${f} ]]; then
        diff -u --label "a/${f}" --label "b/${f}" "${RB_DIR}/tree/${f}" "${out}/${f}" || true
      else
        diff -u --label "a/${f}" --label "b/${f}" /dev/null "${out}/${f}" || true
      fi
    done
  } >"${patch}.merged"
  mv -f -- "${patch}.merged" "${patch}"
  return 0
}

# rebase_merged TAG NAME: push the merged patch at fuzz 0 and refresh it with
# quilt (the project's diff format); its header says where it came from.
rebase_merged() {
  local tag=$1 name=$2 patch today family=${V_FAMILY[$1]}
  patch="$(family_dir "${tag}")/${name}"
  printf '%s\n' "${name}" >>"${RB_DIR}/applied.series"
  if ! quilt_in "${RB_DIR}/tree" "${tag}" "${RB_DIR}/applied.series" push --fuzz=0 >"${RB_DIR}/push.log" 2>&1 ||
    ! quilt_in "${RB_DIR}/tree" "${tag}" "${RB_DIR}/applied.series" refresh -p ab --no-timestamps --no-index >>"${RB_DIR}/push.log" 2>&1; then
    sed -i '$d' "${RB_DIR}/applied.series"
    cp -- "${P2P_DATA_DIR}/patches/${family}/${name}" "${patch}"
    rb_set "${name}" conflict "the three-way merge on ${RB_BASE} did not apply at fuzz 0 (internal error; see ${RB_DIR}/push.log)"
    return 0
  fi
  today=$(date -u +%Y-%m-%d)
  sed -i -E -e "0,/^--- /s/^Last-Update: .*/Last-Update: ${today}/" -e "0,/^--- /{/^X-Refreshed-From: /d}" "${patch}"
  sed -i "0,/^Last-Update: /s//X-Refreshed-From: family ${family}, three-way merge on ${RB_BASE}, by build.sh rebase ${tag}\n&/" "${patch}"
  rb_set "${name}" merged "three-way merge on ${RB_BASE}, refreshed by quilt at fuzz 0"
}

# rebase_table TAG FAMILY: the per-patch table, on stdout and in RB_DIR/table.
rebase_table() {
  local tag=$1 family=$2 name
  {
    printf 'rebase %s: family %s (three-way base %s), per patch:\n' "${tag}" "${family}" "${RB_BASE:-none}"
    for name in "${RB_NAMES[@]+"${RB_NAMES[@]}"}"; do
      printf '  %-50s %-10s %s\n' "${name}" "${RB_RESULT[${name}]//-/ }" "${RB_DETAIL[${name}]}"
    done
  } | tee "${RB_DIR}/table"
}

# rebase_verdict: person (a conflict), new (something merged or dropped) or fits.
rebase_verdict() {
  local name verdict=fits
  for name in "${RB_NAMES[@]+"${RB_NAMES[@]}"}"; do
    case ${RB_RESULT[${name}]} in
    conflict) verdict=person && break ;;
    merged | upstream | superseded) verdict=new ;;
    esac
  done
  printf '%s\n' "${verdict}"
}

# rebase_changes_summary: "merged: A; upstream: B; superseded: C" (or "every
# patch applies").
rebase_changes_summary() {
  local kind name list out=""
  for kind in merged upstream superseded left-out; do
    list=""
    for name in "${RB_NAMES[@]+"${RB_NAMES[@]}"}"; do
      [[ ${RB_RESULT[${name}]} == "${kind}" ]] && list+="${list:+, }${name%%-[a-z]*.patch}"
    done
    [[ -n ${list} ]] && out+="${out:+; }${kind}: ${list}"
  done
  printf '%s\n' "${out:-every patch applies}"
}

# --- the new family ------------------------------------------------------------------

# rebase_write_family TAG FAMILY: RB_DIR/family becomes the new family: the
# dropped patches removed and named in dropped.conf with the evidence, the
# provenance and per-patch table at its top (lines starting "#: "); the diff
# to FAMILY on stdout.
rebase_write_family() {
  local tag=$1 family=$2 new="${RB_DIR}/family" name reason f
  {
    provenance "${tag}" "${family}"
    [[ ! -f ${new}/${DROPPED_FILE} ]] || grep -v '^#: ' "${new}/${DROPPED_FILE}" || true
    for name in "${RB_NAMES[@]+"${RB_NAMES[@]}"}"; do
      case ${RB_RESULT[${name}]} in
      left-out)
        case ${RB_DETAIL[${name}]} in
        *"(X-Applies-If)") reason="not applicable to ${tag}: ${RB_DETAIL[${name}]#* lacks the code it changes: }; dropped by build.sh rebase ${tag}" ;;
        *) reason="upstream has it in ${tag}: ${RB_DETAIL[${name}]#* already has the fix: }; dropped by build.sh rebase ${tag}" ;;
        esac
        ;;
      upstream) reason="${tag} already holds its result (${RB_DETAIL[${name}]%%:*}); dropped by build.sh rebase ${tag}" ;;
      superseded) reason="superseded in ${tag}: ${RB_DETAIL[${name}]}; proof pending" ;;
      *) continue ;;
      esac
      rm -f -- "${new}/${name}"
      printf '%s  %s\n' "${name}" "${reason}"
    done
  } >"${new}/${DROPPED_FILE}.new"
  mv -f -- "${new}/${DROPPED_FILE}.new" "${new}/${DROPPED_FILE}"
  V_FAMILY["${tag}"]=${RB_NEW_FAMILY}
  stage rebase "new family ${RB_NEW_FAMILY}: diff from family ${family}"
  while IFS= read -r f; do
    diff -u --label "${family}/${f}" --label "${RB_NEW_FAMILY}/${f}" \
      "$(existing_or_null "${P2P_DATA_DIR}/patches/${family}/${f}")" "$(existing_or_null "${new}/${f}")" || true
  done < <({ ls -- "${P2P_DATA_DIR}/patches/${family}"; ls -- "${new}"; } | sort -u)
}

# provenance TAG FAMILY: the "#: " lines at the top of a new family's
# dropped.conf: where it came from, and the per-patch table.
provenance() {
  printf '#: Family %s: written by build.sh rebase %s on %s from family %s\n' "${RB_NEW_FAMILY}" "$1" "$(date -u +%Y-%m-%d)" "$2"
  printf '#: (three-way base %s). The DEP-3 headers and modprobe.conf are family\n' "${RB_BASE:-none}"
  printf "#: %s's: where they name its tags, they speak of that family. Per patch:\\n" "$2"
  sed -n '2,$s/^  /#:   /p' "${RB_DIR}/table"
}

existing_or_null() {
  if [[ -e $1 ]]; then printf '%s\n' "$1"; else printf '/dev/null\n'; fi
}

# dropped_reason_set FILE NAME REASON: NAME's line in the dropped.conf FILE
# says REASON.
dropped_reason_set() {
  awk -v n="$2" -v r="$3" '$1 == n { print n "  " r; next } { print }' "$1" >"$1.new"
  mv -f -- "$1.new" "$1"
}

# --- proving a superseded compat patch ---------------------------------------------

# patch_kernel_since PATCH: the first kernel series PATCH is needed for: its
# X-Kernel-Since header, else the lowest kernel of the kernels.conf rules whose
# reason names it (compat-0006 for compat-0006-pahole-gen-btf.patch); nothing
# when neither says.
patch_kernel_since() {
  local patch=$1 since short
  since=$(sed -n -E '/^--- /q; s/^X-Kernel-Since:[[:space:]]*([0-9]+\.[0-9]+)[[:space:]]*$/\1/p' "${patch}" | head -n 1)
  if [[ -z ${since} && -r ${P2P_DATA_DIR}/kernels.conf ]]; then
    short=$(grep -o -E '^(compat|p2p)-[0-9]{4}' <<<"${patch##*/}")
    since=$(awk -v s="${short}" '$1 !~ /^#/ && NF > 4 && index($0, s) { print $1 }' "${P2P_DATA_DIR}/kernels.conf" | sort -V | head -n 1)
  fi
  printf '%s\n' "${since}"
}

# rebase_kernels: the kernels at hand, "SERIES<tab>KREL<tab>HOW" per line:
# --kernel / --kernel-src, or the running kernel's headers, and each --chroot
# (HOW: kernel:KVER, kernel-src:DIR or chroot:NAME:DIR).
rebase_kernels() {
  local spec krel running
  if [[ -n ${P2P_KERNEL_SRC} ]]; then
    krel=$(kernel_release_of "${P2P_KERNEL_SRC}") && printf '%s\t%s\tkernel-src:%s\n' "$(kernel_series "${krel}")" "${krel}" "${P2P_KERNEL_SRC}"
  elif [[ -n ${P2P_KERNEL} ]]; then
    have_kernel_headers "${P2P_KERNEL}" && printf '%s\t%s\tkernel:%s\n' "$(kernel_series "${P2P_KERNEL}")" "${P2P_KERNEL}" "${P2P_KERNEL}"
  else
    running=$(uname -r)
    have_kernel_headers "${running}" && printf '%s\t%s\tkernel:%s\n' "$(kernel_series "${running}")" "${running}" "${running}"
  fi
  for spec in "${P2P_CHROOTS[@]+"${P2P_CHROOTS[@]}"}"; do
    if krel=$("${RB_CHROOT_SH}" kernel "${spec%%:*}" "${spec#*:}" 2>/dev/null) && [[ -n ${krel} ]]; then
      printf '%s\t%s\tchroot:%s\n' "$(kernel_series "${krel}")" "${krel}" "${spec}"
    else
      warn "--chroot ${spec}: no kernel found there (made with ci/setup/chroot.sh make ${spec%%:*} ${spec#*:}?)"
    fi
  done
  return 0
}

# proof_kernels SINCE: the kernels at hand of series SINCE or later.
proof_kernels() {
  local since=$1 series krel how
  while IFS=$'\t' read -r series krel how; do
    [[ -n ${series} ]] && version_le "${since}" "${series}" && printf '%s\t%s\t%s\n' "${series}" "${krel}" "${how}"
  done < <(rebase_kernels | sort -u)
  return 0
}

# rebase_superseded: the patches judged superseded, one per line.
rebase_superseded() {
  local name
  for name in "${RB_NAMES[@]+"${RB_NAMES[@]}"}"; do
    [[ ${RB_RESULT[${name}]} == superseded ]] && printf '%s\n' "${name}"
  done
  return 0
}

# rebase_prove_plan TAG: under --dry-run, which builds would prove each
# superseded patch (or that none can here).
rebase_prove_plan() {
  local tag=$1 name since kernels
  while IFS= read -r name; do
    [[ -n ${name} ]] || continue
    since=$(patch_kernel_since "${P2P_DATA_DIR}/patches/${RB_FAMILY_FROM}/${name}")
    kernels=$(proof_kernels "${since:-99.0}" | cut -f2 | paste -sd' ' -)
    if [[ -z ${since} ]]; then
      printf 'would need a person: %s names no kernel range (X-Kernel-Since, kernels.conf), so it cannot be proven superseded\n' "${name}"
    elif [[ -z ${kernels} ]]; then
      printf 'would need a person: no kernel %s or later at hand to prove %s superseded (pass --chroot NAME:DIR or --kernel-src DIR)\n' "${since}" "${name}"
    else
      printf 'would prove %s superseded: %s without it, all modules for %s\n' "${name}" "${tag}" "${kernels}"
    fi
  done < <(rebase_superseded)
}

# rebase_from FAMILY: the family the tag is rebased from (RB_FAMILY_FROM).
RB_FAMILY_FROM=""
rebase_from() {
  RB_FAMILY_FROM=$1
}

# rebase_tested TESTED: TESTED and the tokens the proof builds earned, in
# versions.conf's order.
rebase_tested() {
  tr ',' '\n' <<<"$1${RB_PROVEN_BUILDS:+,${RB_PROVEN_BUILDS}}" | sort -u | tested_sorted | paste -sd, -
}

# rebase_prove TAG: each superseded patch is proven (dropped.conf then says
# how) or becomes a conflict (a person is needed: exit 7).
rebase_prove() {
  local tag=$1 name since series krel how log failed="" reason
  local -a names=()
  local -A need=() ok=() fail=()
  mapfile -t names < <(rebase_superseded)
  [[ ${#names[@]} -gt 0 ]] || return 0
  for name in "${names[@]}"; do
    since=$(patch_kernel_since "${P2P_DATA_DIR}/patches/${RB_FAMILY_FROM}/${name}")
    if [[ -z ${since} ]]; then
      rb_set "${name}" conflict "${RB_DETAIL[${name}]}; it names no kernel range (X-Kernel-Since, kernels.conf), so it cannot be proven superseded"
      continue
    fi
    if [[ -z $(proof_kernels "${since}") ]]; then
      rb_set "${name}" conflict "${RB_DETAIL[${name}]}; no kernel ${since} or later at hand to prove it superseded (pass --chroot NAME:DIR or --kernel-src DIR)"
      continue
    fi
    while IFS=$'\t' read -r series krel how; do need["${krel}"]=${how}; done < <(proof_kernels "${since}")
  done
  [[ -z $(rebase_conflict_names) ]] || rebase_conflicts "${tag}" "${RB_FAMILY_FROM}"
  rebase_staging_data "${tag}"
  for krel in $(printf '%s\n' "${!need[@]}" | sort -V); do
    log="${RB_DIR}/prove-${krel}.log"
    stage prove "${tag} without $(printf '%s ' "${names[@]}")for ${krel} (${need[${krel}]%%:*}; a full build)"
    if proof_build "${tag}" "${need[${krel}]}" "${krel}" >"${log}" 2>&1; then
      ok["${krel}"]=1
    else
      # the first error line (not the line that names the run's log)
      fail["${krel}"]=$(grep -v -E '^build\.sh: (log|next): ' "${log}" | grep -m 1 -E 'build.sh: |error:' ||
        tail -n 1 "${log}")
      failed+="${krel} "
    fi
  done
  for name in "${names[@]}"; do
    [[ ${RB_RESULT[${name}]} == superseded ]] || continue
    since=$(patch_kernel_since "${P2P_DATA_DIR}/patches/${RB_FAMILY_FROM}/${name}")
    reason="" krel=""
    while IFS=$'\t' read -r series krel how; do
      if [[ -n ${fail[${krel}]+x} ]]; then
        rb_set "${name}" conflict "${RB_DETAIL[${name}]}; without it ${tag} fails for ${krel}: ${fail[${krel}]} (log ${RB_DIR}/prove-${krel}.log)"
        continue 2
      fi
      reason+="${reason:+, }${krel}"
    done < <(proof_kernels "${since}")
    rb_set "${name}" superseded "${RB_DETAIL[${name}]}; proven: without it ${tag} builds all five modules for ${reason} (kernels ${since}+ at hand) and the kernels.conf rules pass"
    printf 'rebase %s: %s superseded, %s\n' "${tag}" "${name}" "${RB_DETAIL[${name}]#*; }"
    dropped_reason_set "${RB_DIR}/family/${DROPPED_FILE}" "${name}" \
      "superseded in ${tag}: ${RB_DETAIL[${name}]} (build.sh rebase ${tag}, $(date -u +%Y-%m-%d))"
  done
  [[ -z $(rebase_conflict_names) ]] || { rebase_table "${tag}" "${RB_FAMILY_FROM}" >/dev/null && rebase_conflicts "${tag}" "${RB_FAMILY_FROM}"; }
  RB_PROVEN_BUILDS=$(for krel in "${!ok[@]}"; do printf 'build:%s\n' "$(kernel_series "${krel}")"; done | sort -u | paste -sd, -)
  rebase_table "${tag}" "${RB_FAMILY_FROM}" >/dev/null
  # dropped.conf's table says what the proofs found
  { provenance "${tag}" "${RB_FAMILY_FROM}" && grep -v '^#: ' "${RB_DIR}/family/${DROPPED_FILE}"; } >"${RB_DIR}/family/${DROPPED_FILE}.new"
  mv -f -- "${RB_DIR}/family/${DROPPED_FILE}.new" "${RB_DIR}/family/${DROPPED_FILE}"
}

# rebase_staging_data TAG: RB_DIR/data, a data directory in which TAG is
# listed in the new family (RB_DIR/family), for the proof builds.
rebase_staging_data() {
  local tag=$1 data="${RB_DIR}/data"
  rm -rf -- "${data}"
  mkdir -p "${data}/patches"
  cp -- "${P2P_DATA_DIR}/series" "${data}/"
  [[ ! -f ${P2P_DATA_DIR}/kernels.conf ]] || cp -- "${P2P_DATA_DIR}/kernels.conf" "${data}/"
  versions_with_line "${tag}" <"$(versions_file)" >"${data}/versions.conf"
  cp -a -- "${RB_DIR}/family" "${data}/patches/${RB_NEW_FAMILY}"
}

# proof_build TAG HOW KREL: build.sh build TAG with the staging data, for the
# kernel HOW names (in its chroot for chroot:NAME:DIR); this run's locks are
# handed down (it waits).
proof_build() {
  local tag=$1 how=$2 krel=$3 prog name dir
  local -a args env
  prog=$(dirname "${P2P_LIB_DIR}")
  env=("NVP2P_DATA_DIR=${RB_DIR}/data" "NVP2P_HELD_LOCKS=$(held_locks_env)")
  args=(--cache-dir "${P2P_CACHE_DIR}" --work-dir "${P2P_WORK_DIR}" build "${tag}")
  [[ ${P2P_NO_CCACHE} -eq 0 ]] || args+=(--no-ccache)
  case ${how} in
  kernel:*) env "${env[@]}" "${prog}/build.sh" ${P2P_ROOT:+--root "${P2P_ROOT}"} "${args[@]}" --kernel "${how#kernel:}" ;;
  kernel-src:*) env "${env[@]}" "${prog}/build.sh" "${args[@]}" --kernel-src "${how#kernel-src:}" ;;
  chroot:*)
    name=${how#chroot:}
    dir=${name#*:}
    name=${name%%:*}
    "${RB_CHROOT_SH}" run "${name}" "${dir}" --bind "${prog}:${prog}" --bind "${P2P_CACHE_DIR}:${P2P_CACHE_DIR}" \
      --bind "${P2P_WORK_DIR}:${P2P_WORK_DIR}" -- \
      env "${env[@]}" "CCACHE_DIR=${P2P_CACHE_DIR}/ccache-chroot-${name}" "${prog}/build.sh" "${args[@]}" --kernel "${krel}"
    ;;
  esac
}

# --- conflicts ----------------------------------------------------------------------

rebase_conflict_names() {
  local name
  for name in "${RB_NAMES[@]+"${RB_NAMES[@]}"}"; do
    [[ ${RB_RESULT[${name}]} == conflict ]] && printf '%s\n' "${name}"
  done
  return 0
}

# rebase_conflicts TAG FAMILY: each conflicting patch's hunks, the work tree
# kept for a manual port (not under --dry-run); exit 7.
rebase_conflicts() {
  local tag=$1 family=$2 name rej rej_file names
  names=$(rebase_conflict_names | paste -sd' ' -)
  printf 'rebase %s: family %s does not carry over: a person is needed for %s\n' "${tag}" "${family}" "${names}"
  for name in ${names}; do
    printf '%s: %s\n' "${name}" "${RB_DETAIL[${name}]}"
    rebase_rejects "${tag}" "${name}"
    while IFS= read -r rej; do
      rej_file=${rej%.rej}
      reject_report "${rej}" "${rej_file}" "${rej_file#"${RB_DIR}/rejects/${name}/"}"
    done < <(find "${RB_DIR}/rejects/${name}" -name '*.rej' -type f | sort)
  done
  if [[ ${P2P_DRY_RUN} -eq 0 ]]; then
    cat <<EOF

The work tree is kept for a manual port: ${RB_DIR}/tree (pristine source:
${RB_DIR}/src), with every patch that applied or merged pushed by quilt
(series ${RB_DIR}/applied.series, patches ${RB_DIR}/family); each
conflicting patch's files with its rejected hunks are under
${RB_DIR}/rejects/<patch>/. To port by hand:
  cd ${RB_DIR}/tree
  export QUILT_PATCHES=${RB_DIR}/family QUILT_SERIES=${RB_DIR}/applied.series QUILT_PC=.pc
  echo <patch> >>${RB_DIR}/applied.series
  quilt --quiltrc - push -f --fuzz=0       # then apply its rejected hunks by hand
  quilt --quiltrc - refresh -p ab --no-timestamps --no-index
Then copy ${RB_DIR}/family to patches/<new family>/, make each DEP-3 header
and modprobe.conf true for ${tag}'s code, and run:
  build.sh rebase ${tag} --family <new family>
Nothing was added to versions.conf or patches/.
EOF
  fi
  rebase_person "${tag}" "family ${family} does not carry over to ${tag}: conflict in ${names}"
}

# rebase_rejects TAG NAME: RB_DIR/rejects/NAME, the patch's files as they are
# in the work tree with its hunks force-applied (fuzz 2) and the rest in *.rej.
rebase_rejects() {
  local tag=$1 name=$2 out="${RB_DIR}/rejects/$2" f
  rm -rf -- "${out}"
  mkdir -p "${out}"
  while IFS= read -r f; do
    mkdir -p "${out}/$(dirname "${f}")"
    if [[ -e ${RB_DIR}/tree/${f} ]]; then cp -- "${RB_DIR}/tree/${f}" "${out}/${f}"; else : >"${out}/${f}"; fi
  done < <(patch_files "${P2P_DATA_DIR}/patches/${RB_FAMILY_FROM:-${V_FAMILY[${tag}]}}/${name}")
  patch -d "${out}" -p1 -f --fuzz=2 --no-backup-if-mismatch <"${P2P_DATA_DIR}/patches/${RB_FAMILY_FROM:-${V_FAMILY[${tag}]}}/${name}" >/dev/null 2>&1 || true
}

# reject_report REJ FILE REL: for each rejected hunk, where it belongs in the
# new source (the function around the first of its lines that is still there)
# and which of its lines, and of their identifiers, are gone.
reject_report() {
  local rej=$1 file=$2 rel=$3 hunk=0 line at=0
  local -a lines=()
  RJ_DELTA=0
  [[ -s ${file} ]] || printf '  %s: the file is not in the new source\n' "${rel}"
  while IFS= read -r line || [[ -n ${line} ]]; do
    case ${line} in
    '@@ '*)
      [[ ${hunk} -gt 0 ]] && reject_hunk "${rel}" "${file}" "${hunk}" "${at}" "${lines[@]+"${lines[@]}"}"
      hunk=$((hunk + 1))
      lines=()
      at=$(sed -n -E 's/^@@ -([0-9]+).*/\1/p' <<<"${line}")
      at=$((at + RJ_DELTA))
      ;;
    '---'* | '+++'* | '***'*) ;;
    ' '* | '-'*) lines+=("${line:1}") ;;
    esac
  done <"${rej}"
  [[ ${hunk} -gt 0 ]] && reject_hunk "${rel}" "${file}" "${hunk}" "${at}" "${lines[@]+"${lines[@]}"}"
  return 0
}

# RJ_DELTA: how far the file moved at the last hunk anchored on a unique line.
RJ_DELTA=0

# reject_hunk REL FILE N AT LINE...: LINEs are the hunk's context and removed
# lines, as the patch expects them in FILE at line AT of the old source.
reject_hunk() {
  local rel=$1 file=$2 n=$3 at=$4 l where="" fn="" id count unique=0
  shift 4
  local -a gone_lines=() gone_ids=()
  for l in "$@"; do
    [[ -n ${l//[[:space:]]/} ]] || continue
    count=$(grep -c -F -x -- "${l}" "${file}" || true)
    if [[ ${count} -gt 0 ]]; then
      # Anchor on the first line found only once in the file, else on the
      # occurrence of the first line found that is nearest to the old position.
      if [[ ${unique} -eq 0 && (-z ${where} || ${count} -eq 1) ]]; then
        where=$(grep -n -F -x -- "${l}" "${file}" | cut -d: -f1 |
          awk -v at="${at}" '{ d = $1 - at; if (d < 0) d = -d; if (best == "" || d < bd) { best = $1; bd = d } } END { print best }')
        [[ ${count} -eq 1 ]] && unique=1 && RJ_DELTA=$((RJ_DELTA + where - at))
      fi
      continue
    fi
    gone_lines+=("${l}")
    while IFS= read -r id; do
      grep -q -w -- "${id}" "${file}" || gone_ids+=("${id}")
    done < <(grep -o -E '[A-Za-z_][A-Za-z0-9_]{7,}' <<<"${l}")
  done
  if [[ -z ${where} ]]; then
    printf '  %s, hunk %s: none of its lines are in the file any more: the code moved or was rewritten\n' "${rel}" "${n}"
  else
    [[ ${rel} == *.[ch] ]] && fn=$(enclosing_function "${file}" "${where}")
    printf '  %s, hunk %s: belongs near line %s%s\n' "${rel}" "${n}" "${where}" "${fn:+, in ${fn}()}"
    [[ ${#gone_lines[@]} -eq 0 ]] &&
      printf '      all of its lines are still in the file, but no longer together: upstream inserted or reordered lines there\n'
  fi
  for l in "${gone_lines[@]+"${gone_lines[@]}"}"; do
    printf '      no longer in the file: %s\n' "${l}"
  done
  if [[ ${#gone_ids[@]} -gt 0 ]]; then
    printf '      gone from %s: %s\n' "${rel##*/}" "$(printf '%s\n' "${gone_ids[@]}" | sort -u | tr '\n' ' ')"
  fi
}

# enclosing_function FILE LINE: the name of the C function around LINE, found
# by walking up to a definition ("name(" at the start of a line, or NVIDIA's
# style: the name alone on a line, its "(" on the next).
enclosing_function() {
  awk -v stop="$2" '
    NR > stop { exit }
    /^[A-Za-z_][A-Za-z0-9_ *]*[A-Za-z0-9_]+[ ]*\(/ && $0 !~ /;[ ]*$/ {
      s = $0; sub(/[ ]*\(.*/, "", s); n = split(s, w, /[ *]+/); name = w[n]; next
    }
    /^[A-Za-z_][A-Za-z0-9_]*[ ]*$/ { cand = $1; candline = NR; next }
    /^\(/ && NR == candline + 1 { name = cand }
    END { print name }' "$1"
}
