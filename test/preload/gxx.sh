#!/bin/sh
# gxx.sh: g++ compiling a small C++ program with the library preloaded
# (inherited by cc1plus, as and ld), and without it.  The generated
# assembly must be identical, and the program -- run both plainly and with
# the library preloaded -- must print the same thing.
. "$(dirname "$0")/common.sh"
CXX_PROG=${CXX_PROG:-g++}
skip_unless "$CXX_PROG"
check_lib
scratch

cat >"$tmp/prog.cc" <<'CC'
// A program with plenty of templates (work for the compiler) and plenty of
// allocation at run time (work for the allocator).
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

struct Node {
  std::string name;
  std::vector<std::unique_ptr<Node>> kids;
};

static size_t build(Node &n, int depth, unsigned &seed) {
  size_t count = 1;
  if (depth == 0) return count;
  int k = 1 + (seed = seed * 1103515245u + 12345u) % 4;
  for (int i = 0; i < k; i++) {
    auto kid = std::make_unique<Node>();
    kid->name = n.name + "/" + std::to_string(i);
    count += build(*kid, depth - 1, seed);
    n.kids.push_back(std::move(kid));
  }
  return count;
}

int main() {
  unsigned seed = 42;
  Node root{"root", {}};
  size_t nodes = build(root, 9, seed);
  std::map<std::string, int> m;
  std::unordered_map<int, std::string> u;
  for (int i = 0; i < 200000; i++) {
    m["k" + std::to_string(i % 5000)] += i;
    u[i % 7919] += static_cast<char>('a' + i % 26);
  }
  std::vector<long> v(100000);
  std::iota(v.begin(), v.end(), 1);
  std::reverse(v.begin(), v.end());
  std::sort(v.begin(), v.end());
  long total = std::accumulate(v.begin(), v.end(), 0L);
  size_t ulen = 0;
  for (auto &kv : u) ulen += kv.second.size();
  std::printf("nodes=%zu map=%zu first=%d ulen=%zu total=%ld\n", nodes, m.size(),
              m.begin()->second, ulen, total);
  return 0;
}
CC

check_binding "$CXX_PROG" --version
( cd "$tmp" && "$CXX_PROG" -std=c++17 -O2 -S prog.cc -o without.s ) >"$tmp/cc1.log" 2>&1 ||
  fail "g++ -S without the library failed: $(head -n 5 "$tmp/cc1.log")"
( cd "$tmp" && LD_PRELOAD=$PRELOAD_LIB "$CXX_PROG" -std=c++17 -O2 -S prog.cc -o with.s ) \
  >"$tmp/cc2.log" 2>&1 || fail "g++ -S with the library failed: $(head -n 5 "$tmp/cc2.log")"
same "$tmp/without.s" "$tmp/with.s" "generated assembly"
( cd "$tmp" && LD_PRELOAD=$PRELOAD_LIB "$CXX_PROG" -std=c++17 -O2 prog.cc -o prog ) \
  >"$tmp/cc3.log" 2>&1 || fail "g++ (compile and link) with the library failed: $(head -n 5 "$tmp/cc3.log")"
"$tmp/prog" >"$tmp/run-without.out" 2>&1 || fail "the compiled program failed"
LD_PRELOAD=$PRELOAD_LIB "$tmp/prog" >"$tmp/run-with.out" 2>&1 ||
  fail "the compiled program failed with the library: $(head -n 5 "$tmp/run-with.out")"
cat "$tmp/run-with.out"
same "$tmp/run-without.out" "$tmp/run-with.out" "program output"
echo "PASS"
