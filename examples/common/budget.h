#pragma once
// An experiment's budgets, named as every program's `experiment --budget` names them: tiny
// (seconds, for the tests: the whole pipeline, learning next to nothing), demo (minutes on two
// cores), long (an hour or two) and the paper's own sizes. A program lists its budgets, each a
// struct with a `name` and the sizes it sets, and finds them here by name:
//
//   command->add_option("--budget", name)->check(CLI::IsMember(examples::budget_names(budgets)));
//   const Budget budget = examples::budget_named(budgets, name, "convpool_cnn_c");

#include <normgrad/normgrad.h>

#include <string>
#include <vector>

namespace examples {

// The budgets' names, in their order.
template <class Budget> std::vector<std::string> budget_names(const std::vector<Budget>& budgets) {
  std::vector<std::string> names;
  for (const Budget& budget : budgets) names.push_back(budget.name);
  return names;
}

// The budget called `name`; for another name, an Error naming `program` and the budgets:
// "--budget must be tiny, demo or long, got 'huge'".
template <class Budget>
Budget budget_named(const std::vector<Budget>& budgets, const std::string& name,
                    const std::string& program) {
  std::string names;
  for (std::size_t i = 0; i < budgets.size(); ++i) {
    if (budgets[i].name == name) return budgets[i];
    names += (i == 0 ? "" : i + 1 == budgets.size() ? " or " : ", ") + budgets[i].name;
  }
  throw normgrad::Error(program + ": --budget must be " + names + ", got '" + name + "'");
}

}  // namespace examples
