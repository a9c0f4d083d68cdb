import json,math,collections,gzip,sys
d=json.load(gzip.open(sys.argv[1]))
ms=[m for m in d['measurements'] if m['status']=='ok']
print(len(ms), collections.Counter(m['status'] for m in d['measurements']))
by=collections.defaultdict(dict)
for m in ms: by[m['problem']][m['kernel']]=m['median_us']
allpairs=[]
for prob,ks in by.items():
    best=lambda f: min([t for k,t in ks.items() if f(k)] or [float('nan')])
    ws=best(lambda k:k.startswith('weight_sparse'))
    lc=best(lambda k:k.endswith('lc1'))
    tb1=best(lambda k:'tb1' in k)
    tb2=best(lambda k:'tb2' in k and k.endswith('lc0'))
    act=best(lambda k:k.startswith('act_sparse'))
    pairs=[ks[k[:-1]+'1']/ks[k] for k in ks if k.endswith('lc0') and 'tb2' in k and k[:-1]+'1' in ks]
    allpairs+=pairs
    g=math.exp(sum(map(math.log,pairs))/len(pairs))
    print(prob[:34], 'act_sparse %.2f | ws tb1 %.2f tb2 %.2f tb2+lc %.2f | lc1/lc0 geo %.3f [%.3f, %.3f] n %d, lc1 faster in %d'%(act,tb1,tb2,lc,g,min(pairs),max(pairs),len(pairs),sum(p<1 for p in pairs)))
print('all pairs geo %.3f n %d'%(math.exp(sum(map(math.log,allpairs))/len(allpairs)),len(allpairs)))
