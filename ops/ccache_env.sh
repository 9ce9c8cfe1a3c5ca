# The ccache settings of every build of the tree (sourced by ops/build.sh and
# ops/fuzz.sh; $root is the checkout).
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/schedfarm-ccache}"
# Precompiled headers and ccache work together only with these sloppiness settings.
export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
# Paths relative to the checkout, so that another clone of the tree hits the cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"
