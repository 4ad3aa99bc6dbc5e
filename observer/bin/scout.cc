// build/bin/scout: the CLI that reads the observer's store (docs/cli.md).
#include "observer/cli/common.h"

int main(int argc, char** argv) { return scout::cli::main(argc, argv); }
