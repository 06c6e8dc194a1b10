module meshrehearsal/pause

go 1.22
