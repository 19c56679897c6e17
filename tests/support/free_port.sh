#!/usr/bin/env bash
# Print a TCP port that is free on 127.0.0.1 right now.
exec node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
