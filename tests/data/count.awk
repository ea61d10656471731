{ n++ } END { print n + 0 }
