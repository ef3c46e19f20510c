module github.com/hermes-box/boxes/scripts/render-markdown

go 1.26

require github.com/yuin/goldmark v1.8.7
