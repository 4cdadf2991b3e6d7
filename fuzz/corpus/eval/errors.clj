[(first 1)]
