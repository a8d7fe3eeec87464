// jobctl: everything happens in cli::run (cli/commands.cpp).
#include "cli/context.hpp"

int main(int argc, char** argv) { return jobctl::cli::run(argc, argv); }
