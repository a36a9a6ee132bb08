"""The lint checks, one module per layer; the registry finds every visitor here by module scan."""
