// exec/builtins.cc — the executors every orch has: shell, builtin:echo, builtin:json.
#include <memory>

#include "exec/builtin_executor.h"
#include "exec/shell_executor.h"
#include "orch/executor.h"

namespace orch {

ExecutorRegistry ExecutorRegistry::with_builtins() {
  ExecutorRegistry registry;
  registry.add("shell", std::make_shared<ShellExecutor>());
  registry.add("builtin:echo", std::make_shared<BuiltinExecutor>(BuiltinExecutor::Kind::Echo));
  registry.add("builtin:json", std::make_shared<BuiltinExecutor>(BuiltinExecutor::Kind::Json));
  return registry;
}

}  // namespace orch
