// For each problem key on stdin: the default choice, then each family's default (or '-').
#include <cstdio>
#include <iostream>
#include <string>
#include "generator/family.hpp"
#include "generator/gpu_json.hpp"
#include "generator/kernel_spec.hpp"
using namespace convgen;
int main() {
  Gpu gpu = load_gpu("gpus/h200.json");
  std::string key;
  while (std::cin >> key) {
    Problem p = parse_problem_key(key);
    std::string line = key + " " + kernel_name(default_choice(p, gpu));
    for (const Family* f : all_families()) {
      auto s = f->default_spec(p, gpu);
      line += " " + (s && !f->check_support(p, gpu, *s) ? kernel_name(*s) : std::string("-"));
    }
    puts(line.c_str());
  }
}
