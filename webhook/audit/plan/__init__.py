"""Planning: the fewest feasible moves after which nothing checked is violated."""
