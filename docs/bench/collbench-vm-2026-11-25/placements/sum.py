import sys,glob,statistics as st,re
# columns of interest by header name
rows={}
for f in sorted(glob.glob('r*-*.md')):
    mode=f.split('-')[-1][:-3]
    hdr=None
    for line in open(f):
        if line.startswith('| collective'):
            hdr=[h.strip() for h in line.strip().strip('|').split('|')]
            continue
        if hdr and line.startswith('| ') and not line.startswith('|---'):
            c=[x.strip() for x in line.strip().strip('|').split('|')]
            if len(c)!=len(hdr): continue
            key=(mode,c[0],c[1])
            for name in [n for n in ['mpi-i/mpi','do-nochecks/mpi','do-blocking/mpi','do-after/mpi','do/mpi'] if n in hdr]:
                rows.setdefault(key,{}).setdefault(name,[]).append(float(c[hdr.index(name)]))
print('| single copy | collective | bytes | do-nochecks/mpi | do-after/mpi (before) | do-blocking/mpi | mpi-i/mpi |')
print('|---|---|---:|---:|---:|---:|---:|')
for k in sorted(rows,key=lambda k:(k[0],k[1],int(k[2].split()[0]))):
    r=rows[k]
    f=lambda n: '%.2f (%.2f–%.2f)'%(st.median(r[n]),min(r[n]),max(r[n]))
    print('| %s | %s | %s | %s | %s | %s | %s |'%(k[0],k[1],k[2],f('do-nochecks/mpi'),f('do-after/mpi'),f('do-blocking/mpi') if 'do-blocking/mpi' in r else '–',f('mpi-i/mpi')))
