module example.com/tool-cli-go

go 1.19
