// errno_keeper.h: restore errno on scope exit.
//
// Purpose: code that runs inside malloc (OS calls, file reads) must not change errno for a
// successful allocation; callers do not expect it. Layer: support. No state.
#pragma once

#include <cerrno>

namespace je {

class ErrnoKeeper {
 public:
  ErrnoKeeper() : saved_(errno) {}
  ~ErrnoKeeper() { errno = saved_; }
  ErrnoKeeper(const ErrnoKeeper&) = delete;
  ErrnoKeeper& operator=(const ErrnoKeeper&) = delete;

 private:
  int saved_;
};

}  // namespace je
